/**
 * Counts the characters that `String.prototype.startsWith` is asked to compare while `run` runs: the measure of
 * work a stream relay does to find each chunk's delta, independent of the machine's speed. A relay that compares
 * every chunk's whole text with the previous chunk's makes it grow with the square of the reply's length.
 */
export async function comparedCharacters(run: () => unknown): Promise<number> {
  const original = String.prototype.startsWith;
  let compared = 0;
  String.prototype.startsWith = function startsWith(this: string, search: string, position?: number) {
    if (typeof search === 'string') compared += search.length;
    return original.call(this, search, position);
  };
  try {
    await run();
  } finally {
    String.prototype.startsWith = original;
  }
  return compared;
}
