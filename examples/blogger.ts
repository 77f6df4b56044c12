/**
 * Multiple agents: an asynchronous writer/critic pair that refines a blog post, run for several
 * topics at once, each in its own session.
 */
import {
  type AgentBase,
  type AgentMessage,
  AsyncAgent,
  type AsyncBaseLLM,
  type AsyncForwardOptions,
  type ChatMessage,
  Hook,
  type SessionId,
} from 'lagent-ts';
import { describeModel, pickAsyncLLM } from './shared/model';
import { heading, isMain } from './shared/print';

/** Prefixes messages from the given senders, e.g. to tell the critic what to do with the draft. */
class PrefixedMessageHook extends Hook {
  constructor(
    private readonly prefix: string,
    private readonly senders: readonly string[] = [],
  ) {
    super();
  }

  override beforeAgent(_agent: AgentBase, messages: AgentMessage[], _sessionId: SessionId): void {
    for (const message of messages) {
      if (this.senders.includes(message.sender)) message.content = this.prefix + message.content;
    }
  }
}

export class AsyncBlogger extends AsyncAgent {
  writer: AsyncAgent;
  critic: AsyncAgent;

  constructor(
    llm: AsyncBaseLLM,
    writerPrompt: string,
    criticPrompt: string,
    criticPrefix = '',
    private readonly maxTurn = 2,
  ) {
    super();
    this.writer = new AsyncAgent({ llm, template: writerPrompt, name: 'writer' });
    this.critic = new AsyncAgent({
      llm,
      template: criticPrompt,
      name: 'critic',
      hooks: [new PrefixedMessageHook(criticPrefix, ['writer'])],
    });
  }

  override async forward(
    [message]: AgentMessage[],
    { sessionId }: AsyncForwardOptions,
  ): Promise<AgentMessage> {
    let current = message!;
    for (let turn = 0; turn < this.maxTurn; turn++) {
      current = await this.writer.call(current, { sessionId });
      current = await this.critic.call(current, { sessionId });
    }
    return this.writer.call(current, { sessionId });
  }
}

/** The mock's script: drafts from the writer, critiques from the critic, told apart by the system prompt. */
function scriptedReply(messages: ChatMessage[]): string {
  const isCritic = messages[0]?.content?.startsWith('Generate critique') ?? false;
  const topic = /recent updates in ([^.]+)\./.exec(messages[1]?.content ?? '')?.[1] ?? 'the topic';
  const round = messages.filter((message) => message.role === 'assistant').length + 1;
  return isCritic
    ? `Critique ${round}: more concrete examples, shorter paragraphs.`
    : `Draft ${round} about ${topic}: three paragraphs, revised after ${round - 1} critiques.`;
}

export async function main(): Promise<void> {
  heading('Multiple agents: asynchronous writer and critic', describeModel());
  const blogger = new AsyncBlogger(
    pickAsyncLLM(scriptedReply),
    'You are a writing assistant tasked to write engaging blog posts. If the user provides critique, respond with a revised version of your previous attempt.',
    'Generate critique and recommendations on the writing. Provide detailed recommendations, including requests for length, depth and style.',
    'Reflect and provide critique on the following writing.\n\n',
  );
  const prompt = (topic: string) =>
    `Write an engaging blog post on the recent updates in ${topic}. It should be understandable for a general audience, with more than 3 paragraphs and no more than 1000 words.`;
  const topics = ['AI', 'Biotechnology', 'New Energy', 'Video Games', 'Pop Music'];
  const replies = await Promise.all(topics.map((topic, i) => blogger.call(prompt(topic), { sessionId: i })));
  for (const [i, reply] of replies.entries()) console.log(`session ${i}: ${reply.content}`);
  for (const key of ['writer.memory', 'critic.memory']) {
    console.log(`\nblogger.stateDict(0)['${key}']:`);
    for (const message of blogger.stateDict(0)[key]!) {
      console.log(`  ${message.sender}: ${String(message.content).replace(/\n+/g, '\n    ')}`);
    }
  }
}

if (isMain(import.meta.url)) await main();
