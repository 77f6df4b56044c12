/** One figure a benchmark prints; `target` is the bound in the same unit, when there is one. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  /** Upper bound the figure should stay under (same unit). */
  target?: number;
  /** Free text shown after the figure, e.g. the baseline it is compared with. */
  note?: string;
}

export type Report = (row: BenchRow) => void;

/** A benchmark suite: `bench/<name>.ts` exports `run`. */
export type Suite = (report: Report) => Promise<void>;
