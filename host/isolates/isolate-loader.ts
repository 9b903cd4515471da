import { writeSync } from "node:fs";
import ivm from "isolated-vm";
import type { CrossingText } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { BRIDGE_SOURCE } from "./bridge-source.js";
import { type CacheKeys, CodeCache } from "./code-cache.js";
import { type ColdStartPhase, coldStartLaps } from "./cold-start-trace.js";
import { type CrashSubject, reportCrash } from "./crash-record.js";
import { crashSubjectOf, nameCrashSubject, type Tenant } from "./crash-subjects.js";
import type { IsolateLimits } from "./limits.js";
import { loadRuntimeScript } from "./runtime-script.js";
import { teardownGate } from "./teardown-gate.js";

/** A synchronous entry point into an isolate (inline entries pass numbers and strings only). */
export type InlineEntry = ivm.Reference<(...args: never[]) => void>;

/** The runtime's threaded dispatcher: a request in, a promise of the response wire text out. */
export type ThreadedEntry = ivm.Reference<(requestId: number, json: CrossingText) => Promise<string>>;

/** The runtime's entry points (see runtime/index.ts), taken off its global scope. */
export interface RuntimeEntries {
  dispatch: ThreadedEntry;
  dispatchInline: InlineEntry;
  dispatchInlineMany: InlineEntry;
  resumeInline: InlineEntry;
  resumeInlineMany: InlineEntry;
}

/** The host's end of the threaded bridge (see threaded-transport.ts). */
export interface ThreadedEnd {
  /** A threaded execution's platform call; answers the JSON text of its result (wrapped when long). */
  serveCall(json: unknown): Promise<CrossingText>;
}

/** The host's end of the inline bridge (see inline/transport.ts). */
export interface InlineEnd {
  /** An inline execution's platform call; its answer when ready at once. */
  receiveCall(requestId: unknown, callId: unknown, json: unknown): CrossingText | undefined;
  /** An inline execution's final response. */
  receiveResult(requestId: unknown, wire: unknown): void;
  /** In an entry for several inline executions, the runtime begins `requestId`'s turn. */
  receiveTurn(requestId: unknown): void;
}

/** A loaded isolate, its entries, and the call that connects the bridge's host ends (see runtime/bridge.ts). */
export interface LoadedIsolate {
  isolate: ivm.Isolate;
  entries: RuntimeEntries;
  connect(threaded: ThreadedEnd, inline: InlineEnd | null): void;
}

/** A capsule's loaded isolate, and how it refreshes its code cache (see {@link CodeCache.refresh}). */
export interface LoadedCapsule extends LoadedIsolate {
  /** Refreshes the deployment's own cache of the capsule from this isolate; `code` gives the capsule's code. */
  refreshCaches(code: () => Promise<string>): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 2000;
const RUNTIME_FILENAME = "platform-runtime.js";
const CAPSULE_FILENAME = "capsule.js";

/**
 * When V8 loses control of an isolate (for example one allocation far beyond the heap limit),
 * isolated-vm parks that isolate's thread forever, so the process must stop serving and exit;
 * `platform host` supervises its server process, quarantines the bundle reported here and starts
 * a new server. Neither process.exit() nor timers work here (the main thread may be stuck behind
 * the parked isolate): write synchronously, then end the process at once.
 */
function onCatastrophicError(subject: CrashSubject, message: string): void {
  reportCrash(subject);
  const deployment = subject.deployment ? ` of deployment ${subject.deployment}` : "";
  writeSync(
    2,
    `platform: catastrophic isolate error (${message}) in bundle ${subject.artifact}${deployment}; stopping so the supervisor restarts the host\n`,
  );
  process.kill(process.pid, "SIGKILL");
}

/**
 * An isolate with the bridge and the runtime loaded and no capsule code: made ahead of a cold start
 * (see isolate-factory.ts), any deployment with the same memory limit may take it, once.
 */
export interface BlankIsolate extends LoadedIsolate {
  context: ivm.Context;
  /** The runtime script's content hash (part of the capsule's code-cache key). */
  runtimeHash: string;
  memoryMb: number;
}

/**
 * Where the runtime's compile looks for a cache: the one made after a warm-up in an isolate no
 * tenant code ran in (runtime-warm-up.ts), then the compile-time one.
 */
function runtimeCacheKeys(runtimeHash: string): CacheKeys {
  return {
    compiled: CodeCache.key({ kind: "runtime", hash: runtimeHash }, runtimeHash),
    ran: CodeCache.key({ kind: "warmed-runtime", hash: runtimeHash }, runtimeHash),
  };
}

/**
 * Makes the runtime's warmed cache from `isolate`, where the runtime has dispatched a built-in
 * capsule's calls and nothing else ran: V8 then serializes the runtime's functions those calls
 * compiled, which every cold start would otherwise compile again on its first call.
 */
export async function refreshRuntimeCache(isolate: ivm.Isolate, cache: CodeCache): Promise<void> {
  const runtime = await loadRuntimeScript();
  const key = runtimeCacheKeys(runtime.hash).ran as string;
  await cache.refresh(isolate, async () => runtime.code, key, RUNTIME_FILENAME);
}

/** Creates a {@link BlankIsolate}, its runtime compiled through `cache`. */
export async function createBlankIsolate(
  limits: IsolateLimits,
  cache: CodeCache,
  lap: (phase: ColdStartPhase) => void = () => {},
): Promise<BlankIsolate> {
  await teardownGate.beforeCreate();
  const isolate: ivm.Isolate = new ivm.Isolate({
    memoryLimit: limits.memoryMb,
    onCatastrophicError: (message) => onCatastrophicError(crashSubjectOf(isolate), message),
  });
  lap("isolate");
  try {
    // The runtime's compile does not need the context: queued beside its creation (at once when
    // its cache is in memory, after the file's read otherwise), it need not wait for this thread
    // to take the context back first. Both are awaited before any synchronous use of the isolate
    // below, which would otherwise wait on this thread for the isolate's thread to finish them.
    const runtime = await loadRuntimeScript();
    const [context, compiled] = await Promise.all([
      isolate.createContext(),
      cache.compile(isolate, runtime.code, runtimeCacheKeys(runtime.hash), RUNTIME_FILENAME),
    ]);
    lap("context");
    let threadedEnd: ThreadedEnd | undefined;
    let inlineEnd: InlineEnd | null = null;
    const bridge = new ivm.Reference((json: string) => (threadedEnd as ThreadedEnd).serveCall(json));
    const post = new ivm.Reference((requestId: unknown, callId: unknown, json: unknown) =>
      inlineEnd?.receiveCall(requestId, callId, json),
    );
    const done = new ivm.Reference((requestId: unknown, wire: unknown) =>
      inlineEnd?.receiveResult(requestId, wire),
    );
    const turn = new ivm.Reference((requestId: unknown) => inlineEnd?.receiveTurn(requestId));
    // Synchronously, as the entries below: platform code that only defines four functions.
    context.evalClosureSync(BRIDGE_SOURCE, [bridge, post, done, turn]);
    await compiled.script.run(context, { timeout: STARTUP_TIMEOUT_MS });
    lap("runtime");
    // Taken synchronously: the isolate is idle and nobody else holds it, so each is a short lock
    // of it on this thread, where an asynchronous one would cost two thread hops each.
    const entry = (name: string) => {
      const reference = context.global.getSync(name, { reference: true });
      context.global.deleteSync(name);
      return reference;
    };
    const entries: RuntimeEntries = {
      dispatch: entry("__platform_dispatch") as ThreadedEntry,
      dispatchInline: entry("__platform_dispatch_inline") as InlineEntry,
      dispatchInlineMany: entry("__platform_dispatch_inline_many") as InlineEntry,
      resumeInline: entry("__platform_resume_inline") as InlineEntry,
      resumeInlineMany: entry("__platform_resume_inline_many") as InlineEntry,
    };
    lap("entries");
    const connect = (threaded: ThreadedEnd, inline: InlineEnd | null) => {
      threadedEnd = threaded;
      inlineEnd = inline;
    };
    return { isolate, context, entries, connect, runtimeHash: runtime.hash, memoryMb: limits.memoryMb };
  } catch (error) {
    throw loadFailure(isolate, error);
  }
}

/** Where {@link loadIsolate} takes what it may reuse, and whom the capsule runs for. */
export interface LoadFrom {
  /** Compiles through it: a shared cache keys the capsule by `artifact` (see loadIsolate). */
  cache?: CodeCache;
  /** A blank isolate to load into (a new one is made without it). */
  blank?: BlankIsolate;
  /**
   * The deployment's id and incarnation, when known: the capsule may then use, and later refresh,
   * a cache of its own made after its code ran.
   */
  scope?: string;
  /** Whom the capsule runs for, named in a crash report. */
  tenant?: Tenant;
}

/**
 * Loads the capsule bundle `code` (content hash `artifact`) into `from.blank`, or into a new blank
 * isolate when none is given, compiling through `from.cache`: a shared cache keys the capsule by
 * `artifact`, which must then be the sha256 of `code` (V8 checks a cache against its source's
 * length only); without one, a cache of its own. A capsule that does not compile, throws or runs
 * out of memory while loading fails with `bad_request`.
 */
export async function loadIsolate(
  code: string,
  artifact: string,
  limits: IsolateLimits,
  from: LoadFrom = {},
): Promise<LoadedCapsule> {
  const { cache = new CodeCache(), blank, scope } = from;
  const lap = coldStartLaps();
  // A blank isolate of another memory limit would not hold the capsule to its own.
  if (blank && blank.memoryMb !== limits.memoryMb) blank.isolate.dispose();
  const usable = blank && !blank.isolate.isDisposed ? blank : undefined;
  const loaded = usable ?? (await createBlankIsolate(limits, cache, lap));
  const { isolate, context } = loaded;
  nameCrashSubject(isolate, artifact, from.tenant);
  const keys = {
    compiled: CodeCache.key({ kind: "capsule", hash: artifact }, loaded.runtimeHash),
    ...(scope === undefined
      ? {}
      : { ran: CodeCache.key({ kind: "capsule", hash: artifact, scope }, loaded.runtimeHash) }),
  };
  let capsule: ivm.Script;
  try {
    capsule = (await cache.compile(isolate, code, keys, CAPSULE_FILENAME)).script;
  } catch (error) {
    const failure = new PlatformError(
      "bad_request",
      `The capsule bundle does not compile: ${(error as Error).message}`,
    );
    throw loadFailure(isolate, failure);
  }
  lap("compile");
  try {
    await capsule.run(context, { timeout: STARTUP_TIMEOUT_MS });
  } catch (error) {
    // The isolate's error stays as the cause: its stack (bundle positions) is the developer's to
    // map, as platform dev does; the message alone is what callers get.
    const failure = new PlatformError(
      "bad_request",
      `The capsule threw while loading: ${(error as Error).message}`,
      { cause: error },
    );
    throw loadFailure(isolate, failure);
  }
  lap("run");
  // Not the runtime's cache: every tenant's isolate uses it, and this one has run tenant code.
  const refreshCaches = async (capsuleCode: () => Promise<string>) => {
    if (keys.ran !== undefined) await cache.refresh(isolate, capsuleCode, keys.ran, CAPSULE_FILENAME);
  };
  return { isolate, entries: loaded.entries, connect: loaded.connect, refreshCaches };
}

/** Disposes of an isolate that failed to load, and says why as a platform error. */
function loadFailure(isolate: ivm.Isolate, error: unknown): PlatformError {
  // Gone before this code disposes it: isolated-vm did, which it does by itself only at the memory limit.
  const outOfMemory = isolate.isDisposed;
  if (outOfMemory) teardownGate.noteTeardown();
  if (!isolate.isDisposed) isolate.dispose();
  if (isPlatformError(error)) return error;
  if (outOfMemory) return new PlatformError("bad_request", "The capsule ran out of memory while loading.");
  return new PlatformError("bad_request", `The capsule failed to load: ${(error as Error).message}`);
}
