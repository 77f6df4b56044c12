/**
 * The positions of the `k` highest of `count` scores, highest first (ties: the lower position first). One
 * pass, keeping the best `k` sorted: a new score costs a comparison unless it enters the top.
 */
export function topK(scores: Float32Array, count: number, k: number): number[] {
  const size = Math.min(k, count);
  if (size === 0) return [];
  const best: number[] = [];
  const bestScores: number[] = [];
  let floor = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < count; index++) {
    const score = scores[index]!;
    if (best.length === size && score <= floor) continue;
    let at = best.length;
    while (at > 0 && bestScores[at - 1]! < score) at--;
    best.splice(at, 0, index);
    bestScores.splice(at, 0, score);
    if (best.length > size) {
      best.pop();
      bestScores.pop();
    }
    if (best.length === size) floor = bestScores[size - 1]!;
  }
  return best;
}
