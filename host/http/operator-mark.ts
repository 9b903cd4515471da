import { randomBytes, scryptSync } from "node:crypto";
import { sameSecret } from "../auth/index.js";

/** scrypt's cost: tens of milliseconds a guess, once per salt in a process. */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
/** Salts whose derived value a process keeps (one per process that made sessions in 12 hours). */
const KEPT_SALTS = 64;

/**
 * What an operator's dashboard session stores in place of the operator token: `<salt>:<scrypt of
 * the token>`. It was the token's plain SHA-256, which a backup or a copy of the data folder
 * carries: an operator's memorable `PLATFORM_ADMIN_TOKEN` was one fast hash a guess away. A
 * process derives the value once per salt (its own salt, and those of sessions other processes
 * made with the same token), so a request costs no scrypt.
 */
export class OperatorMarks {
  private readonly salt = randomBytes(16).toString("hex");
  private readonly derived = new Map<string, string>();

  constructor(private readonly adminToken: string) {}

  /** The mark a new operator session stores. */
  mark(): string {
    return `${this.salt}:${this.derive(this.salt)}`;
  }

  /** Whether `stored` was made with this host's operator token (an older mark, or another token's, is not). */
  matches(stored: string): boolean {
    const [salt, value, rest] = stored.split(":");
    if (!salt || !value || rest !== undefined || !/^[0-9a-f]{32}$/.test(salt)) return false;
    return this.adminToken.length > 0 && sameSecret(this.derive(salt), value);
  }

  private derive(salt: string): string {
    let value = this.derived.get(salt);
    if (value === undefined) {
      value = scryptSync(this.adminToken, salt, 32, SCRYPT).toString("hex");
      if (this.derived.size < KEPT_SALTS) this.derived.set(salt, value);
    }
    return value;
  }
}
