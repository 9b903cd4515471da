import { randomBytes } from "node:crypto";

const ID_BYTES = 16;
const ID_POOL_IDS = 256;
let idPool = randomBytes(ID_BYTES * ID_POOL_IDS);
let idPoolAt = 0;

/** A new row id: 128 random bits, base64url. Random bytes are drawn in bulk, once per 256 ids. */
export function newRowId(): string {
  if (idPoolAt === idPool.length) {
    idPool = randomBytes(ID_BYTES * ID_POOL_IDS);
    idPoolAt = 0;
  }
  const id = idPool.toString("base64url", idPoolAt, idPoolAt + ID_BYTES);
  idPoolAt += ID_BYTES;
  return id;
}
