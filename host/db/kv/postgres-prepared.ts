import { createHash } from "node:crypto";
import type pg from "pg";
import { readOnly } from "./postgres-silence.js";
import { inline, type Statement } from "./postgres-sql.js";

/**
 * Statement texts given a name at most. A snapshot's reads have few texts (a scan's differ only by
 * table, order, columns and whether it resumes: see `iterate`); past this, new ones go as text.
 */
const NAMED_TEXTS = 1024;

/** Each statement text's name, by text. */
const names = new Map<string, string>();
/**
 * What each connection will have prepared once the messages sent on it so far have run, if they
 * succeed; absent: not known. Written as each message is made, which is when it is sent (the
 * driver runs a connection's messages in the order they were sent): a message made while another
 * is on its way counts that one's PREPAREs as done, and never prepares a name twice.
 */
const prepared = new WeakMap<pg.ClientBase, Set<string>>();

/** One message of reads on a connection: see {@link preparedReads}. */
export interface PreparedMessage {
  /**
   * Statements to run before the reads (forgetting and preparing names), after the transaction's
   * BEGIN: a statement before it in the same message would fix the transaction's isolation level.
   */
  setup: string[];
  /** The reads, in order, each as an `EXECUTE` of its name (or as text: see {@link preparedReads}). */
  reads: string[];
  /** Call with whether the message succeeded: when it did not, what the connection holds is unknown. */
  settle(ok: boolean): void;
}

function nameOf(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < NAMED_TEXTS) {
    name = `platform_read_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * `statements` (reads) as ONE simple-protocol message on `client`, by name; send it at once (see
 * {@link prepared}). PostgreSQL plans a statement sent as text every time (for a page of 50 rows,
 * about as long as running it), and the simple protocol, which lets a snapshot's BEGIN and its
 * first read share a round trip, has no parameters. So a connection `PREPARE`s a read's text the
 * first time a message of its carries it, and `EXECUTE`s it from then on. A statement without
 * parameters goes as it is. After a failed message (its PREPAREs may or may not have run, and
 * outlive a rollback) the connection's next message that `begins` a transaction forgets them all
 * (`DEALLOCATE ALL`; no other code names statements) and prepares again; only such a message may,
 * since an aborted transaction refuses the reset. Any other message on a connection whose names
 * are not known sends its reads as text. Undefined, with nothing changed, when a statement is too
 * large to write as text (see `inline`): send it with parameters instead.
 */
export function preparedReads(
  client: pg.ClientBase,
  statements: Statement[],
  begins: boolean,
): PreparedMessage | undefined {
  const byName = begins || prepared.has(client);
  const reads: string[] = [];
  const readNames: Array<string | undefined> = [];
  for (const statement of statements) {
    const name = byName && named(statement) ? nameOf(statement.text) : undefined;
    const text = inline(
      name === undefined ? statement : { text: executeText(name, statement), values: statement.values },
    );
    if (text === undefined) return undefined;
    reads.push(text);
    readNames.push(name);
  }
  if (!byName) return { setup: [], reads, settle: () => {} };
  let held = prepared.get(client);
  const setup: string[] = [];
  if (!held) {
    setup.push("DEALLOCATE ALL");
    held = new Set();
    prepared.set(client, held);
  }
  for (const [i, name] of readNames.entries()) {
    if (name === undefined || held.has(name)) continue;
    setup.push(`PREPARE ${name} AS ${(statements[i] as Statement).text}`);
    held.add(name);
  }
  return {
    setup,
    reads,
    settle: (ok) => {
      if (!ok) prepared.delete(client);
    },
  };
}

/**
 * Whether `statement` runs by name: it has parameters, and no empty array among them (whose type
 * its text would not tell: `ARRAY[]` is only a literal where a cast follows it in the text).
 */
function named(statement: Statement): boolean {
  return (
    statement.values.length > 0 &&
    statement.values.every((value) => !Array.isArray(value) || value.length > 0)
  );
}

/** `EXECUTE name($1, ..., $n)` for `statement`'s parameters. */
function executeText(name: string, statement: Statement): string {
  return `EXECUTE ${name}(${statement.values.map((_, i) => `$${i + 1}`).join(", ")})`;
}

/**
 * PostgreSQL's codes for an `EXECUTE` of a name the session does not know, and a `PREPARE` of one
 * it knows: what a connection holds is not what the host thought (see {@link ReadsMessage.retryLead}).
 */
const NAMES_UNLIKE_RECORD = new Set(["26000", "42P05"]);

/** How {@link runReads} sends its message. */
export interface ReadsMessage {
  /** The `lead` ends the connection's transaction and begins one (see {@link preparedReads}). */
  begins?: boolean;
  /** The message writes (a commit's): the silence watch must not end it (see postgres-silence.ts). */
  writes?: boolean;
  /**
   * Where the server's names are not what the host thought (something reset the session, or a
   * message made while another was on its way counted on PREPAREs a failure skipped), send the
   * message once more, forgetting them all and preparing again, with these statements first
   * instead of the `lead` (which must begin a transaction too).
   */
  retryLead?: string[];
}

/**
 * Runs `lead` (SQL texts: the end of the connection's last transaction, the next one's BEGIN),
 * then `reads`, as ONE simple-protocol message on `client` (see {@link preparedReads}), and
 * returns the reads' rows; undefined, with nothing sent, when a read is too large to write as text.
 */
export async function runReads(
  client: pg.ClientBase,
  lead: string[],
  reads: Statement[],
  options: ReadsMessage = {},
): Promise<pg.QueryResultRow[][] | undefined> {
  const message = preparedReads(client, reads, options.begins === true);
  if (!message) return undefined;
  const text = [...lead, ...message.setup, ...message.reads].join("; ");
  let answer: pg.QueryResult | pg.QueryResult[];
  try {
    answer = (await client.query(options.writes ? text : readOnly(text))) as unknown as
      | pg.QueryResult
      | pg.QueryResult[];
  } catch (error) {
    message.settle(false);
    const retryLead = options.retryLead;
    if (retryLead && NAMES_UNLIKE_RECORD.has(String((error as { code?: unknown }).code)))
      return runReads(client, retryLead, reads, { begins: true, writes: options.writes === true });
    throw error;
  }
  message.settle(true);
  const results = Array.isArray(answer) ? answer : [answer];
  return results.slice(results.length - reads.length).map((result) => result.rows);
}
