import type { SchemaSpec } from "../../sdk/values/index.js";

/** Schema used by the crash-test writer and checker. */
export const CRASH_SCHEMA: SchemaSpec = {
  tables: {
    items: {
      fields: {
        n: { kind: "number", optional: false },
        tag: { kind: "string", optional: false },
        pad: { kind: "string", optional: false },
      },
      indexes: { by_n: ["n"], by_tag_n: ["tag", "n"] },
    },
    counter: { fields: { value: { kind: "number", optional: false } }, indexes: {} },
  },
};
