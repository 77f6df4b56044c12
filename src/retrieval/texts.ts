import { ValidationError } from '../schema/errors';

/**
 * The texts of an `embed` call, checked before anything is sent: an array of strings, none empty or only
 * white space (embedding APIs refuse them, and a vector of nothing would match everything equally).
 */
export function checkTexts(texts: unknown, owner: string): readonly string[] {
  if (!Array.isArray(texts)) {
    throw new ValidationError({ message: `${owner}.embed takes an array of texts`, field: 'texts' });
  }
  for (const [index, text] of (texts as unknown[]).entries()) {
    if (typeof text !== 'string') {
      throw new ValidationError({
        message: `${owner}.embed: texts[${index}] must be a string, got ${typeof text}`,
        field: `texts[${index}]`,
      });
    }
    if (text.trim() === '') {
      throw new ValidationError({
        message: `${owner}.embed: texts[${index}] is empty; embed only texts with content`,
        field: `texts[${index}]`,
      });
    }
  }
  return texts as readonly string[];
}

/** A rough token count (about four characters a token), for servers that report no usage. */
export function estimateTokens(texts: readonly string[]): number {
  let characters = 0;
  for (const text of texts) characters += text.length;
  return Math.ceil(characters / 4);
}
