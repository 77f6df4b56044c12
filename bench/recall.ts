import { runLongMemory } from './helpers/long-memory';
import type { Report, Suite } from './report';

/**
 * Semantic recall on a synthetic long memory (bench/helpers/long-memory.ts): one user's 200 sessions of
 * chit-chat with 100 planted facts, each asked about later (half in the session that planted it, ten or more
 * turns on; half in a later session). recall@5: the share of questions whose fact was in the prompt the model
 * was sent, with `TokenWindowAggregator`'s `recall` (`topK: 5`, `scope: 'resource'`, the deterministic
 * HashEmbedder, MemoryVectorStore) and with the token window alone, at the same `maxTokens`; and the prompt
 * tokens per model call. No small embedding model ships inside an npm package (the packages that run one,
 * transformers.js and fastembed, download its weights at first use), so only the deterministic embedder is
 * measured here.
 */
/** A minimum score for the HashEmbedder: every planted fact's question scores its fact above it. */
const MIN_SCORE = 0.4;

export const run: Suite = async (report: Report) => {
  for (const maxTokens of [256, 512]) {
    const on = await runLongMemory({ recall: true, maxTokens });
    const off = await runLongMemory({ recall: false, maxTokens });
    report({
      name: `recall@5 of planted facts, maxTokens ${maxTokens}: semantic recall`,
      value: on.recallAtK,
      unit: 'share',
      note: `${on.questions} questions`,
    });
    report({
      name: `recall@5 of planted facts, maxTokens ${maxTokens}: token window alone`,
      value: off.recallAtK,
      unit: 'share',
    });
    report({
      name: `prompt tokens per call, maxTokens ${maxTokens}: recall / window alone`,
      value: on.tokensPerCall,
      unit: 'tokens',
      note: `window alone ${off.tokensPerCall.toFixed(0)}; per question ${on.tokensPerQuestion.toFixed(0)} / ${off.tokensPerQuestion.toFixed(0)}; ${on.calls} calls, ${on.callsWithBlock} with a recalled block`,
    });
    // With a minimum score: the set's chit-chat is made of few words, so to a bag-of-words embedder it resembles
    // earlier chit-chat; a higher minScore drops facts before it drops those blocks.
    const floor = await runLongMemory({ recall: true, maxTokens, minScore: MIN_SCORE });
    report({
      name: `recall@5 of planted facts, maxTokens ${maxTokens}: semantic recall, minScore ${MIN_SCORE}`,
      value: floor.recallAtK,
      unit: 'share',
    });
    report({
      name: `prompt tokens per call, maxTokens ${maxTokens}: recall with minScore ${MIN_SCORE}`,
      value: floor.tokensPerCall,
      unit: 'tokens',
      note: `per question ${floor.tokensPerQuestion.toFixed(0)}; ${floor.callsWithBlock} of ${floor.calls} calls with a recalled block`,
    });
  }
};
