import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `'fewer'` in the unit project (vitest.config.ts), `'all'` in the integration project. */
    propertyRuns: 'all' | 'fewer';
  }
}

/**
 * How many runs a property test (fast-check) makes: all `runs` in the integration project, a tenth of them (at
 * least 10) in the unit project, so the unit loop stays quick and still tries every property on fresh inputs
 * each time. The integration project runs every unit file that imports fast-check again, with all its runs
 * (vitest.config.ts).
 *
 * @example
 * fc.assert(fc.property(fc.string(), (text) => ...), { numRuns: propertyRuns(1_000) });
 */
export function propertyRuns(runs: number): number {
  return inject('propertyRuns') === 'fewer' ? Math.max(10, Math.ceil(runs / 10)) : runs;
}
