// "Did you mean …?" for a mistyped command: the nearest known name by edit distance, if it is near enough to be
// a typo rather than a different word.

/** Levenshtein distance (insert, delete, substitute: 1 each). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    prev = cur
  }
  return prev[b.length]!
}

/**
 * The candidate nearest to `typed`, when it is within a third of the typed length (at least 1, at most 3 edits);
 * ties go to the earlier candidate.
 */
export function closest(typed: string, candidates: readonly string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(typed.length / 3)))
  let best: {name: string; d: number} | undefined
  for (const name of candidates) {
    const d = editDistance(typed, name)
    if (d <= limit && (!best || d < best.d)) best = {name, d}
  }
  return best?.name
}
