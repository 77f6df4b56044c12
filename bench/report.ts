/** One figure a benchmark prints; `target` is the bound in the same unit, when there is one. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  /** The bound (same unit): an upper bound, or a lower bound when `atLeast` is set. */
  target?: number;
  /** `target` is a floor the figure must reach (e.g. a speed-up ratio), not a ceiling. */
  atLeast?: boolean;
  /** Free text shown after the figure, e.g. the baseline it is compared with. */
  note?: string;
}

export type Report = (row: BenchRow) => void;

/** A benchmark suite: `bench/<name>.ts` exports `run`. */
export type Suite = (report: Report) => Promise<void>;

/** Whether a row meets its target (rows without one always do). */
export function meetsTarget(row: BenchRow): boolean {
  if (row.target === undefined) return true;
  return row.atLeast ? row.value >= row.target : row.value <= row.target;
}
