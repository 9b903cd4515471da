/** A message between hosts sharing one store (commits, migrations, changed records). */
export type HostMessage =
  | { type: "commit"; deployment: string; keys?: string[]; all?: boolean }
  | { type: "schema"; deployment: string }
  | { type: "deployment"; id: string };
