import { createInterface } from "node:readline/promises";
import { Writable } from "node:stream";
import { type Command, Option } from "commander";
import { printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { hostKey, readConfig, writeConfig } from "../config.js";
import { parseHostUrl } from "../flags.js";
import { sendRequest } from "../http.js";
import { runAction } from "../output.js";
import { remoteError } from "../remote-error.js";

/** The token from standard input, or asked for on the terminal (see {@link askUnechoed}). */
async function readToken(): Promise<string> {
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8").trim();
  }
  return (await askUnechoed("Developer token (from POST /v1/developers): ")).trim();
}

/**
 * A line typed on the terminal, not shown as it is typed or pasted: a token echoed stayed on the
 * screen and in the terminal's scrollback, for whoever looks or records it. Readline keeps its
 * line editing, its echo going nowhere; Ctrl-C ends the command as it would anywhere else.
 */
async function askUnechoed(question: string): Promise<string> {
  const nowhere = new Writable({ write: (_chunk, _encoding, done) => done() });
  // Made first: it turns the terminal's own echo off, which must be off before the prompt shows.
  const prompt = createInterface({ input: process.stdin, output: nowhere, terminal: true });
  process.stderr.write(question);
  prompt.on("SIGINT", () => {
    prompt.close();
    process.stderr.write("\n");
    process.exit(130);
  });
  try {
    return await prompt.question("");
  } finally {
    prompt.close();
    process.stderr.write("\n");
  }
}

/**
 * Who `GET /v1/me` says the token is: the operator, or a developer and its id. An answer that is
 * not one is an error, and the id is only ever printed escaped: a server's id carrying escape codes
 * cleared the screen and wrote "You are now logged in as the operator" (an attack review,
 * 2026-12-06).
 */
function whoIsSignedIn(text: string): { kind: string; id?: string } {
  let who: unknown;
  try {
    who = JSON.parse(text);
  } catch {
    // not JSON: refused below
  }
  const { kind, id } = (typeof who === "object" && who !== null ? who : {}) as Record<string, unknown>;
  if (typeof kind !== "string" || (id !== undefined && typeof id !== "string"))
    throw new PlatformError(
      "internal",
      "The host's answer to GET /v1/me says nobody: is --host a platform host? Nothing was stored.",
    );
  return id === undefined ? { kind } : { kind, id };
}

/** `platform login --host <url>`: stores a developer token for owner commands. */
export function registerLogin(program: Command): void {
  program
    .command("login")
    .description("store a developer token for a host (PLATFORM_TOKEN overrides it)")
    .addOption(
      new Option("--host <url>", "control plane URL of the host, e.g. http://localhost:8080")
        .makeOptionMandatory()
        .argParser(parseHostUrl),
    )
    .option(
      "--token <token>",
      "the developer token (otherwise asked for, or read from standard input; on a command line it stays in the shell's history and shows in the process list)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  platform login --host http://localhost:8080             # asks for the token\n  platform login --host http://localhost:8080 < token.txt",
    )
    .action((flags: { host: string; token?: string }) =>
      runAction(async () => {
        const token = flags.token ?? (await readToken());
        if (!token)
          throw new PlatformError(
            "bad_request",
            "No token given: paste it when asked, or send it on standard input (platform login --host <url> < token.txt).",
          );
        const me = await sendRequest(new URL("/v1/me", flags.host).toString(), {
          headers: { authorization: `Bearer ${token}` },
        });
        if (me.status !== 200) {
          const error = remoteError(me);
          // The server's code and message, then what to do about it.
          if (error.code === "unauthorized" || error.code === "forbidden")
            throw new PlatformError(
              error.code,
              `${error.message} Ask the host's operator for a developer token (POST /v1/developers).`,
            );
          throw error;
        }
        const who = whoIsSignedIn(me.text());
        const config = readConfig();
        config.logins[hostKey(flags.host)] = { token, ...(who.id ? { developer: who.id } : {}) };
        writeConfig(config);
        process.stdout.write(
          `logged in to ${hostKey(flags.host)} as ${who.kind === "admin" ? "the operator" : printable(who.id ?? "a developer")}\n`,
        );
      }),
    );
}
