/**
 * One line per figure with a target, in a form `npm run bench` (bench/run.ts) collects from every
 * benchmark it runs into one table:
 *
 *   target | <figure> | <value> | <target> | met
 *
 * The last field is `met`, `not met`, or `no target` for a figure printed only for comparison.
 */
export const TARGET_PREFIX = "target | ";

/** A figure with its target; `met` undefined: printed for comparison, no target. */
export function targetLine(figure: string, value: string, target: string, met?: boolean): string {
  const verdict = met === undefined ? "no target" : met ? "met" : "not met";
  return `${TARGET_PREFIX}${figure} | ${value} | ${target} | ${verdict}`;
}

/** A ratio as a percentage ("45%"). */
export const percent = (ratio: number): string => `${Math.round(ratio * 100)}%`;
