/** Weight of a new sample in the moving averages of inline runs (start cost, entry time, handler CPU) and of run-token turns. */
const SAMPLE_WEIGHT = 0.2;

/**
 * `average` moved a fifth of the way toward `sample`: recent runs count most, and one odd run (a
 * garbage collection, a cold compile) moves it only so far. An `average` of 0 means none measured
 * yet: the first sample stands alone.
 */
export function movingAverage(average: number, sample: number): number {
  return average === 0 ? sample : average * (1 - SAMPLE_WEIGHT) + sample * SAMPLE_WEIGHT;
}
