import picocolors from "picocolors";

/** The colour functions of one output stream; each returns its input unchanged when colour is off. */
export type Colors = ReturnType<typeof picocolors.createColors>;

/**
 * Whether output to `stream` may carry colour: never when `NO_COLOR` is set to anything but the
 * empty string (https://no-color.org, and it wins over everything else so a user can always turn
 * colour off), always when `FORCE_COLOR` is set to anything but `0` or `false`, else only when the
 * stream is a terminal that is not `TERM=dumb`. Decided per stream because stdout may be piped
 * while stderr is still a terminal, and piped output must stay free of escape codes.
 */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "") return force !== "0" && force !== "false";
  return stream.isTTY === true && env.TERM !== "dumb";
}

/**
 * The colours for text written to `stream` (picocolors, switched on or off by
 * {@link colorEnabled}).
 *
 * @example
 * const c = colorsFor(process.stderr);
 * process.stderr.write(`${c.red("error")}: ...\n`);
 */
export function colorsFor(stream: { isTTY?: boolean }): Colors {
  return picocolors.createColors(colorEnabled(stream));
}

/** Colours that are all off: for text that is built before its destination is known, and tests. */
export const noColors: Colors = picocolors.createColors(false);
