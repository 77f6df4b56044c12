import { TokenWindowAggregator } from '../../src/agents/aggregator/token-window-aggregator';
import { AsyncAgent } from '../../src/agents/async-agent';
import { countTokens } from '../../src/llms/token-count';
import { MemoryVectorStore } from '../../src/retrieval/memory-vector-store';
import type { Embedder } from '../../src/retrieval/types';
import type { ChatMessage } from '../../src/schema/chat-message';
import { HashEmbedder } from '../../src/testing/hash-embedder';
import { AsyncMockLLM } from '../../src/testing/mock-llm';

/*
 * A synthetic long memory, generated deterministically (a seeded generator): one user's `sessions`
 * conversations of chit-chat, with `facts` facts planted in them, each asked about later — half at the end of
 * the session that planted it (ten or more turns on, out of the token window), half in a later session. Each
 * question is scored by whether the planted message is in the prompt the model was sent (recall@k: recalled
 * among the `topK` matches, or still in the window), with semantic recall on and with the token window alone.
 */

/** mulberry32: a fast seeded generator, so every run builds the same conversations. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COLOURS = ['red', 'blue', 'green', 'yellow', 'purple', 'orange', 'silver', 'black', 'white', 'golden'];
const MATERIALS = [
  'leather',
  'velvet',
  'wooden',
  'steel',
  'canvas',
  'plastic',
  'bamboo',
  'copper',
  'woollen',
  'glass',
];
const THINGS = [
  'bicycle',
  'suitcase',
  'locker',
  'safe',
  'mailbox',
  'toolbox',
  'cabinet',
  'padlock',
  'garage',
  'diary',
];
/** Fact `i`'s subject: any two facts share at most one of its three words (a Latin square). */
function subjectOf(fact: number): string {
  const colour = fact % 10;
  const material = Math.floor(fact / 10) % 10;
  return `${COLOURS[colour]} ${MATERIALS[material]} ${THINGS[(colour + material) % 10]}`;
}
const FACT_FORMS = [
  (subject: string, value: string) => `Please remember that the code of the ${subject} is ${value}.`,
  (subject: string, value: string) => `Note for later: the code of the ${subject} is ${value}.`,
  (subject: string, value: string) =>
    `By the way, the code of the ${subject} is ${value}, I just changed it.`,
];
// Questions name what they ask about and little else: a bag-of-words embedder (the deterministic one) would
// otherwise find the earlier questions of the same wording nearer than the fact.
const QUESTION_FORMS = [
  (subject: string) => `Code of the ${subject}?`,
  (subject: string) => `And the ${subject} code?`,
  (subject: string) => `${subject} code?`,
];
const SUBJECTS = [
  'the weather',
  'my cousin',
  'the new cafe',
  'our neighbours',
  'the football match',
  'a podcast',
  'the train',
  'my garden',
  'a documentary',
  'the market',
];
const VERBS = ['was', 'seemed', 'felt', 'looked', 'sounded'];
const ADJECTIVES = [
  'lovely',
  'strange',
  'busy',
  'quiet',
  'wonderful',
  'boring',
  'noisy',
  'pleasant',
  'odd',
  'bright',
];
const TAILS = [
  'this morning',
  'yesterday',
  'all week',
  'last weekend',
  'today',
  'on Sunday',
  'after lunch',
  'this evening',
];
const REPLIES = ['That sounds nice.', 'Tell me more.', 'Interesting!', 'I see.', 'How fun.', 'Oh really?'];

/** How the recalled block starts. */
const RECALLED = 'Recalled from earlier';

/** One conversation turn the user sends: chit-chat, a planted fact, or the question about one. */
interface Send {
  text: string;
  /** The fact this question asks about (its index). */
  asks?: number | undefined;
}

export interface LongMemoryOptions {
  /** Semantic recall on, or the token window alone. */
  recall: boolean;
  /** @default 200 */
  sessions?: number | undefined;
  /** @default 100 */
  facts?: number | undefined;
  /** Chit-chat turns per session. @default 12 */
  turns?: number | undefined;
  /** @default 5 */
  topK?: number | undefined;
  /** The prompt's window. @default 256 */
  maxTokens?: number | undefined;
  /** Recall's `minScore`. @default none */
  minScore?: number | undefined;
  /** @default a HashEmbedder of 256 dimensions */
  embedder?: Embedder | undefined;
}

export interface LongMemoryResult {
  /** Questions whose planted fact was in the prompt, of all questions. */
  recallAtK: number;
  questions: number;
  calls: number;
  /** Model calls whose prompt had a recalled block. */
  callsWithBlock: number;
  /** Prompt tokens per model call (estimated), over every call. */
  tokensPerCall: number;
  /** Prompt tokens per call of the questions alone. */
  tokensPerQuestion: number;
}

/** The sessions' scripts: what the user says in each, in order. */
function script(sessions: number, facts: number, turns: number): { sends: Send[][]; texts: string[] } {
  const next = random(7);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const sends: Send[][] = Array.from({ length: sessions }, () =>
    Array.from({ length: turns }, () => ({
      text: `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(ADJECTIVES)} ${pick(TAILS)}, ${pick(SUBJECTS)} ${pick(VERBS)} ${pick(ADJECTIVES)} too.`,
    })),
  );
  const texts: string[] = [];
  const spacing = Math.max(1, Math.floor(sessions / facts));
  for (let fact = 0; fact < facts; fact++) {
    const subject = subjectOf(fact);
    const value = String(1000 + Math.floor(next() * 9000));
    const text = FACT_FORMS[fact % 3]!(subject, value);
    texts.push(text);
    const planted = (fact * spacing) % sessions;
    // Early in its session, so ten or more turns follow it there.
    sends[planted]!.splice(Math.floor(next() * 2), 0, { text });
    const question = { text: QUESTION_FORMS[(fact + 1) % 3]!(subject), asks: fact };
    if (fact % 2 === 0) sends[planted]!.push(question);
    else sends[Math.min(sessions - 1, planted + 1 + Math.floor(next() * 3))]!.push(question);
  }
  return { sends, texts };
}

/** Runs the conversations through an agent and scores the questions. */
export async function runLongMemory(options: LongMemoryOptions): Promise<LongMemoryResult> {
  const sessions = options.sessions ?? 200;
  const facts = options.facts ?? 100;
  const { sends, texts } = script(sessions, facts, options.turns ?? 12);
  const embedder = options.embedder ?? new HashEmbedder({ dimensions: 256 });
  const maxTokens = options.maxTokens ?? 256;
  const aggregator = new TokenWindowAggregator({
    maxTokens,
    recall: options.recall
      ? {
          embedder,
          store: new MemoryVectorStore({
            dimensions: embedder.dimensions,
            fields: { session: 'string', position: 'number' },
          }),
          topK: options.topK ?? 5,
          scope: 'resource',
          minScore: options.minScore,
        }
      : undefined,
  });
  let turn = 0;
  let last: ChatMessage[] = [];
  let tokens = 0;
  let calls = 0;
  let withBlock = 0;
  const agent = new AsyncAgent({
    name: 'assistant',
    llm: new AsyncMockLLM({
      record: false,
      responses: (messages) => {
        last = messages;
        tokens += countTokens(messages);
        calls++;
        if (messages.some((message) => message.content?.startsWith(RECALLED))) withBlock++;
        return REPLIES[turn++ % REPLIES.length]!;
      },
    }),
    aggregator,
  });
  let hits = 0;
  let questions = 0;
  let questionTokens = 0;
  for (const [session, list] of sends.entries()) {
    for (const send of list) {
      await agent.call(send.text, { sessionId: `s${session}`, resourceId: 'user-1' });
      if (send.asks === undefined) continue;
      questions++;
      questionTokens += countTokens(last);
      const fact = texts[send.asks]!;
      if (last.some((message) => message.content?.includes(fact))) hits++;
    }
    // Let the background indexing of a session end before the next, as between a user's visits.
    await aggregator.flushRecall();
  }
  return {
    recallAtK: hits / questions,
    questions,
    calls,
    callsWithBlock: withBlock,
    tokensPerCall: tokens / calls,
    tokensPerQuestion: questionTokens / questions,
  };
}
