/** The text before the earliest occurrence of any stop word (the whole text when none occurs). */
export function cutAtStopWords(text: string, stopWords: readonly string[]): string {
  let end = text.length;
  for (const word of stopWords) {
    if (word.length === 0) continue;
    const index = text.indexOf(word);
    if (index !== -1 && index < end) end = index;
  }
  return end === text.length ? text : text.slice(0, end);
}
