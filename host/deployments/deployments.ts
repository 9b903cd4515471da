import { createHash, randomBytes } from "node:crypto";
import type {
  BridgeHttpRequest,
  BridgeIdentity,
  CallUsage,
  CapsuleDeclaration,
  DispatchRequest,
  LegacyOutcome,
} from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { type ErrorCode, isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { matchesHash, newClaimToken, normaliseEmail } from "../auth/index.js";
import {
  type BudgetUsage,
  type Database,
  type MigrationProgress,
  newRowId,
  type ReadSet,
  type RecordStore,
  type Transaction,
} from "../db/index.js";
import {
  type DeploymentRunner,
  type HandlerLogEntry,
  IsolatePool,
  type PoolOptions,
  retryAbandoned,
  transactionSyscalls,
} from "../isolates/index.js";
import { checkDeclaration } from "./declaration.js";
import { type CallRecord, type LogHub, type RequestId, redactSecrets } from "./log-hub.js";
import type { ArtifactRecord, DeploymentRecord } from "./records.js";

/** The outcome of one query or mutation. */
export interface CallResult {
  valueJson: string;
  usage: CallUsage;
  readSet: ReadSet;
  writeSet: Buffer[];
}

/** A query or mutation call. */
export interface Call {
  kind: "query" | "mutation";
  name: string;
  argsJson: string;
  identity: BridgeIdentity | null;
}

/** What a deploy sends: a bundle and its server-only env (absent: keep the current values). */
export interface DeployInput {
  code: string;
  env?: Record<string, string>;
  /** The owning developer, when a new deployment is created by (or for) one. */
  owner?: string;
}

/** A deploy's outcome; `claimToken` only when an unclaimed deployment was just created. */
export type DeployResult = DeploymentRecord & { claimToken?: string };

let seedPool = randomBytes(4096);
let seedAt = 0;

/** A random seed for `Math.random` in one execution, drawn from a pooled buffer. */
function nextSeed(): number {
  if (seedAt === seedPool.length) {
    seedPool = randomBytes(4096);
    seedAt = 0;
  }
  const seed = seedPool.readUInt32LE(seedAt);
  seedAt += 4;
  return seed;
}

const DEPLOYMENT_ID = /^[a-z][a-z0-9-]{0,62}$/;
/** How the call log names each kind of dispatch (legacy calls are queries and mutations too). */
const CALL_KINDS = {
  declare: "query",
  query: "query",
  mutation: "mutation",
  endpoint: "endpoint",
  guestUpgrade: "guestUpgrade",
  legacyQuery: "query",
  legacyMutation: "mutation",
} as const satisfies Record<DispatchRequest["kind"], CallRecord["kind"]>;

/** Runs of a legacy handler spent on asking for more insert ids, beyond one per table. */
const LEGACY_ID_ROUNDS = 12;
/** Most rows one legacy handler may insert. */
const LEGACY_MAX_IDS = 10_000;

/** Checks a deployment id: it becomes a DNS label (`<id>.<domain>`). */
export function checkDeploymentId(id: unknown): string {
  if (typeof id !== "string" || !DEPLOYMENT_ID.test(id) || id.endsWith("-")) {
    throw new PlatformError(
      "bad_request",
      "A deployment id is 1-63 lowercase letters, digits or '-', starting with a letter.",
    );
  }
  return id;
}

/**
 * Every deployment of a host: records, artifacts, deploys and handler calls. The HTTP layer only
 * translates requests into calls on this object.
 */
export class Deployments {
  readonly pool: IsolatePool;
  private readonly records: RecordStore<DeploymentRecord>;
  private readonly artifacts: RecordStore<ArtifactRecord>;
  private readonly cache = new Map<string, DeploymentRecord>();
  private requestCounter = 0;

  constructor(
    readonly db: Database,
    /** Every handler's `ctx.log` lines. */
    readonly logs: LogHub,
    poolOptions: Partial<PoolOptions> = {},
  ) {
    this.records = db.records<DeploymentRecord>("deployments");
    this.artifacts = db.records<ArtifactRecord>("artifacts");
    this.pool = new IsolatePool(async (hash) => {
      const artifact = await this.artifacts.get(hash);
      if (!artifact) throw new PlatformError("internal", `Artifact ${hash} is missing.`);
      return artifact.code;
    }, poolOptions);
    // Another host sharing the database changed or deleted a deployment: drop what we cached.
    db.onAnnouncement((message) => {
      if (message.type !== "deployment") return;
      this.cache.delete(message.id);
      void this.records.get(message.id).then((record) => {
        if (!record) {
          this.pool.remove(message.id);
          db.forget(message.id);
        }
      });
    });
  }

  /** The deployment `id`, or undefined. */
  async get(id: string): Promise<DeploymentRecord | undefined> {
    const cached = this.cache.get(id);
    if (cached) return cached;
    const record = await this.records.get(id);
    if (record) this.cache.set(id, record);
    return record;
  }

  /** The deployment `id`, or `not_found`. */
  async require(id: string): Promise<DeploymentRecord> {
    const record = await this.get(id);
    if (!record) throw new PlatformError("not_found", `No deployment named ${id}.`);
    return record;
  }

  /** Every deployment. */
  list(): Promise<DeploymentRecord[]> {
    return this.records.list();
  }

  /**
   * Deploys `input` as deployment `id` (creating it or replacing its version): compiles the bundle
   * in a fresh isolate, reads and checks its declaration, stores the artifact, migrates the schema,
   * and only then switches the deployment. Any failure leaves the previous version serving. A new
   * deployment without an owner is unclaimed; its claim token is in the result, once.
   */
  async deploy(
    id: string,
    input: DeployInput,
    onProgress?: (progress: MigrationProgress) => void,
  ): Promise<DeployResult> {
    checkDeploymentId(id);
    if (typeof input?.code !== "string" || input.code.length === 0)
      throw new PlatformError("bad_request", "A deploy needs the bundle's code.");
    if (input.code.length > LIMITS.bundleBytes)
      throw new PlatformError("too_large", `The bundle is larger than ${LIMITS.bundleBytes} bytes.`);
    const previous = await this.get(id);
    // A redeploy without env keeps the deployment's current values; one with env replaces them.
    const env = input.env === undefined ? (previous?.env ?? {}) : checkEnv(input.env);
    const hash = createHash("sha256").update(input.code).digest("hex");
    const probe = await this.pool.probe(id, input.code, hash).catch((error: unknown) => {
      throw deployError(error);
    });
    try {
      const declared = await probe.declare().catch((error: unknown) => Promise.reject(deployError(error)));
      let declaration: CapsuleDeclaration;
      try {
        declaration = checkDeclaration(declared);
      } catch (error) {
        throw deployError(error);
      }
      if (!(await this.artifacts.get(hash))) {
        await this.artifacts.put(hash, {
          hash,
          code: input.code,
          apiVersion: declaration.apiVersion,
          size: input.code.length,
          createdAt: Date.now(),
        });
      }
      const database = await this.db.deployment(id);
      await database
        .migrate(declaration.schema, onProgress, { legacy: declaration.apiVersion === 0 })
        .catch((error: unknown) => Promise.reject(deployError(error)));
      const now = Date.now();
      const claim = previous || input.owner ? undefined : newClaimToken();
      const record: DeploymentRecord = {
        owner: previous ? previous.owner : (input.owner ?? null),
        restricted: previous?.restricted ?? false,
        approved: previous?.approved ?? [],
        ...(previous?.claimTokenHash ? { claimTokenHash: previous.claimTokenHash } : {}),
        ...(claim ? { claimTokenHash: claim.hash } : {}),
        id,
        artifact: hash,
        declaration,
        env,
        createdAt: previous?.createdAt ?? now,
        updatedAt: now,
      };
      await this.records.put(id, record);
      this.cache.set(id, record);
      this.pool.runner(id, hash).adopt(probe);
      await this.db.announce({ type: "deployment", id });
      return claim ? Object.assign({}, record, { claimToken: claim.token }) : record;
    } catch (error) {
      probe.dispose();
      throw error;
    }
  }

  /** Claims an unclaimed deployment for `developer` with its claim token. */
  async claim(id: string, developer: string, claimToken: unknown): Promise<DeploymentRecord> {
    const record = await this.require(id);
    if (record.owner !== null) throw new PlatformError("conflict", `Deployment ${id} is already claimed.`);
    if (
      typeof claimToken !== "string" ||
      !record.claimTokenHash ||
      !matchesHash(claimToken, record.claimTokenHash)
    ) {
      throw new PlatformError("forbidden", "That claim token is not valid for this deployment.");
    }
    const { claimTokenHash: _used, ...rest } = record;
    return this.save(Object.assign(rest, { owner: developer, updatedAt: Date.now() }));
  }

  /** Changes access settings: `restricted` and the approved emails. */
  async updateSettings(
    id: string,
    settings: { restricted?: unknown; approved?: unknown },
  ): Promise<DeploymentRecord> {
    const record = await this.require(id);
    const next = Object.assign({}, record, { updatedAt: Date.now() });
    if (settings.restricted !== undefined) {
      if (typeof settings.restricted !== "boolean")
        throw new PlatformError("bad_request", "restricted must be true or false.");
      next.restricted = settings.restricted;
    }
    if (settings.approved !== undefined) {
      if (!Array.isArray(settings.approved))
        throw new PlatformError("bad_request", "approved must be a list of email addresses.");
      next.approved = [...new Set(settings.approved.map((email) => normaliseEmail(email)))];
    }
    return this.save(next);
  }

  private async save(record: DeploymentRecord): Promise<DeploymentRecord> {
    await this.records.put(record.id, record);
    this.cache.set(record.id, record);
    await this.db.announce({ type: "deployment", id: record.id });
    return record;
  }

  /** Deletes a deployment: its isolate, record and every row. */
  async remove(id: string): Promise<void> {
    await this.require(id);
    this.pool.remove(id);
    await this.records.delete(id);
    this.cache.delete(id);
    await this.db.dropDeployment(id);
    await this.db.announce({ type: "deployment", id });
  }

  /** Runs a query or mutation of deployment `id` in its isolate and one transaction. */
  async call(id: string, call: Call): Promise<CallResult> {
    // Nearly every call finds its record cached: no extra turn through `require`.
    const record = this.cache.get(id) ?? (await this.require(id));
    checkAccess(record, call.identity);
    if (record.declaration.auth.requireSignIn) {
      if (!call.identity)
        throw new PlatformError(
          "unauthorized",
          "This app requires sign-in: send Authorization: Bearer <token>.",
        );
      if (call.identity.kind !== "account")
        throw new PlatformError("forbidden", "This app requires a signed-in account; guests cannot use it.");
    }
    const list = call.kind === "query" ? record.declaration.queries : record.declaration.mutations;
    if (!list.includes(call.name))
      throw new PlatformError(
        "not_found",
        `No ${call.kind} named ${JSON.stringify(call.name)} in deployment ${id}.`,
      );
    // Object.assign, not a literal that starts with a spread: see withMode in host/db.
    const fields = {
      requestId: 0,
      name: call.name,
      argsJson: call.argsJson,
      identity: call.identity,
      env: record.env,
      now: Date.now(),
      seed: nextSeed(),
    };
    const request: DispatchRequest =
      record.declaration.apiVersion === 0
        ? Object.assign(fields, {
            kind: call.kind === "query" ? ("legacyQuery" as const) : ("legacyMutation" as const),
            tablesJson: "{}",
            ids: [],
          })
        : Object.assign(fields, { kind: call.kind });
    return this.execute(record, call.kind === "mutation", call.name, call.argsJson, request);
  }

  /**
   * Runs a legacy handler on the snapshot runtime inside `tx`: ships the tables it asks for (every
   * row counts as read) and ids for its inserts, runs it again from the start until it finishes,
   * then applies its writes (mutations) in the same transaction.
   */
  private async runLegacy(
    tx: Transaction,
    runner: DeploymentRunner,
    request: Extract<DispatchRequest, { kind: "legacyQuery" | "legacyMutation" }>,
    sink: (entry: HandlerLogEntry) => void,
    record: DeploymentRecord,
  ): Promise<{ valueJson: string; cpuMs: number }> {
    const shipped = new Map<string, string[]>();
    const issued: string[] = [];
    let cpuMs = 0;
    const syscalls = transactionSyscalls(tx, sink);
    const tables = Object.keys(record.declaration.schema.tables).length;
    for (let attempt = 0; attempt <= tables + LEGACY_ID_ROUNDS; attempt++) {
      const tablesJson = `{${[...shipped].map(([t, rows]) => `${JSON.stringify(t)}:[${rows.join(",")}]`).join(",")}}`;
      const response = await runner.run(Object.assign({}, request, { tablesJson, ids: issued }), syscalls);
      cpuMs += response.cpuMs;
      if (!response.ok)
        throw new PlatformError(
          response.error.code as ErrorCode,
          redactSecrets(response.error.message, record.env),
        );
      const outcome = JSON.parse(response.valueJson) as LegacyOutcome;
      if ("need" in outcome) {
        for (const table of outcome.need.tables ?? [])
          if (!shipped.has(table)) shipped.set(table, await tx.legacyTable(table));
        const wanted = Math.min(Number(outcome.need.ids) || 0, LEGACY_MAX_IDS);
        while (issued.length < wanted) issued.push(newRowId());
        continue;
      }
      tx.budget.returned(Number(outcome.returned) || 0);
      if (request.kind === "legacyMutation") await tx.applyLegacyWrites(outcome.writes, new Set(issued));
      else if (outcome.writes?.length)
        throw new PlatformError("forbidden", "This handler is read-only: queries cannot write.");
      return { valueJson: JSON.stringify(outcome.value ?? null), cpuMs };
    }
    throw new PlatformError("handler_error", `Legacy handler ${request.name} kept asking for more data.`);
  }

  /**
   * Runs custom endpoint `name` of deployment `id` for an HTTP request: `readOnly` endpoints as
   * queries, the others as mutations (serialized, one transaction). A restricted deployment admits
   * only approved accounts; `requireSignIn` does not apply (endpoints authenticate their callers).
   * Returns the endpoint's response as JSON `{ status, headers, body }`.
   */
  async callEndpoint(
    id: string,
    name: string,
    request: BridgeHttpRequest & { bodyText: string },
    identity: BridgeIdentity | null,
  ): Promise<CallResult> {
    const record = await this.require(id);
    checkAccess(record, identity);
    const endpoint = record.declaration.endpoints.find((e) => e.name === name);
    if (!endpoint) throw new PlatformError("not_found", `No endpoint named ${name}.`);
    const now = Date.now();
    return this.execute(
      record,
      !endpoint.readOnly,
      `endpoint:${name}`,
      JSON.stringify([request.method, request.path, request.query]),
      {
        kind: "endpoint",
        requestId: 0,
        name,
        readOnly: endpoint.readOnly,
        request,
        identity,
        env: record.env,
        now,
        seed: nextSeed(),
      },
    );
  }

  /** Runs one dispatch request in the deployment's isolate inside one transaction. */
  private async execute(
    record: DeploymentRecord,
    writes: boolean,
    handler: string,
    argsJson: string,
    request: DispatchRequest,
  ): Promise<CallResult> {
    const database = await this.db.deployment(record.id);
    const runner = this.pool.runner(record.id, record.artifact);
    const requestId: RequestId = { startedMs: Date.now(), seq: ++this.requestCounter };
    const sink = this.logs.sink(record.id, handler, requestId, record.env);
    const started = performance.now();
    let cpuMs = 0;
    let budget: BudgetUsage = { rowsReturned: 0, rowsRead: 0, bytesRead: 0, indexScans: 0, writes: 0 };
    const work = (tx: Transaction, log: (entry: HandlerLogEntry) => void) =>
      this.pool.withSlot(async () => {
        if (request.kind === "legacyQuery" || request.kind === "legacyMutation") {
          const legacy = await this.runLegacy(tx, runner, request, log, record);
          cpuMs = legacy.cpuMs;
          return legacy.valueJson;
        }
        const response = await runner.run(request, transactionSyscalls(tx, log));
        cpuMs = response.cpuMs;
        if (!response.ok)
          throw new PlatformError(
            response.error.code as ErrorCode,
            redactSecrets(response.error.message, record.env),
          );
        return response.valueJson;
      });
    const options = {
      handler,
      argsJson,
      now: "now" in request ? request.now : Date.now(),
      onUsage: (used: BudgetUsage) => {
        budget = used;
      },
    };
    const usage = (): CallUsage => ({
      rowsReturned: budget.rowsReturned,
      rowsRead: budget.rowsRead,
      bytesRead: budget.bytesRead,
      indexScans: budget.indexScans,
      writes: budget.writes,
      cpuMs,
      wallMs: performance.now() - started,
    });
    const kind = CALL_KINDS[request.kind];
    const name = "name" in request ? request.name : handler;
    try {
      const result = await retryAbandoned(sink, (log) =>
        writes
          ? database.mutate((tx) => work(tx, log), options)
          : database.query((tx) => work(tx, log), options),
      );
      const used = usage();
      this.logs.recordCall(record.id, handler, requestId, { kind, name, outcome: "ok", usage: used });
      return { valueJson: result.value, usage: used, readSet: result.readSet, writeSet: result.writeSet };
    } catch (error) {
      const outcome = isPlatformError(error) ? error.code : "internal";
      this.logs.recordCall(record.id, handler, requestId, { kind, name, outcome, usage: usage() });
      throw error;
    }
  }

  /**
   * Upgrades a guest to an account in ONE transaction: every `userId()` field equal to the guest's
   * id (found by index) moves to the account, `auth.onGuestUpgrade` runs, and the guest's session
   * is retired in the same batch. If anything throws nothing changes and the upgrade stays pending
   * for the next sign-in. Two sign-ins of one guest upgrade once (the second sees it retired).
   */
  async upgradeGuest(
    id: string,
    guestUserId: string,
    account: BridgeIdentity,
    retirement: { record: { key: Buffer; value: string }; isRetired: () => Promise<boolean> },
  ): Promise<{ upgraded: boolean; moved: number }> {
    const record = await this.require(id);
    const database = await this.db.deployment(id);
    const runner = this.pool.runner(id, record.artifact);
    const now = Date.now();
    const sink = this.logs.sink(id, "auth.onGuestUpgrade", "upgrade", record.env);
    const upgrade = (log: (entry: HandlerLogEntry) => void) =>
      database.mutate(
        async (tx) => {
          if (await retirement.isRetired()) return { upgraded: false, moved: 0 };
          let moved = 0;
          for (const [table, spec] of Object.entries(record.declaration.schema.tables)) {
            for (const [field, fieldSpec] of Object.entries(spec.fields)) {
              if (fieldSpec.kind === "userId")
                moved += await tx.reassignUserId(table, field, guestUserId, account.userId);
            }
          }
          if (record.declaration.auth.hasGuestUpgradeHook) {
            const request: DispatchRequest = {
              kind: "guestUpgrade",
              requestId: 0,
              guestUserId,
              userId: account.userId,
              identity: account,
              env: record.env,
              now,
              seed: nextSeed(),
            };
            const response = await this.pool.withSlot(() =>
              runner.run(request, transactionSyscalls(tx, log)),
            );
            if (!response.ok)
              throw new PlatformError(
                response.error.code as ErrorCode,
                `Guest upgrade failed: ${response.error.message}`,
              );
          }
          tx.writeRecord(retirement.record.key, retirement.record.value);
          return { upgraded: true, moved };
        },
        { handler: "auth.onGuestUpgrade", now },
      );
    return (await retryAbandoned(sink, upgrade)).value;
  }

  /** Stops every isolate. */
  close(): void {
    this.pool.close();
  }
}

/**
 * The deployment's access policy for app users: a restricted deployment admits only approved
 * accounts (no identity: 401; a guest or another account: 403).
 */
export function checkAccess(record: DeploymentRecord, identity: BridgeIdentity | null): void {
  if (!record.restricted) return;
  if (!identity)
    throw new PlatformError("unauthorized", "This app is restricted: sign in with an approved account.");
  if (identity.kind !== "account" || !identity.email || !record.approved.includes(identity.email)) {
    throw new PlatformError("forbidden", "This app is restricted to approved accounts.");
  }
}

function checkEnv(env: unknown): Record<string, string> {
  if (typeof env !== "object" || env === null || Array.isArray(env))
    throw new PlatformError("bad_request", "env must be an object of strings.");
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== "string")
      throw new PlatformError("bad_request", `env value ${key} must be a string.`);
  }
  return env as Record<string, string>;
}

function deployError(error: unknown): PlatformError {
  if (isPlatformError(error)) {
    return new PlatformError(
      error.code === "too_large" ? "too_large" : "bad_request",
      `Deploy failed: ${error.message}`,
      { cause: error },
    );
  }
  return new PlatformError("bad_request", `Deploy failed: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
  });
}
