/**
 * Custom message aggregation: an aggregator that puts few-shot examples between the system
 * instruction and the conversation, so the model answers in the demonstrated style.
 */
import {
  Agent,
  AgentMessage,
  type ChatMessage,
  DefaultAggregator,
  type Memory,
  type OutputParser,
  type SystemInstruction,
} from 'lagent-ts';
import { describeModel, pickLLM } from './shared/model';
import { heading, isMain, show } from './shared/print';

/** Few-shot turns after the system prompt, then the session's history. */
export class FewShotAggregator extends DefaultAggregator {
  constructor(private readonly fewShot: readonly ChatMessage[] = []) {
    super();
  }

  override aggregate(
    memory: Memory | undefined,
    name: string,
    parser?: OutputParser,
    systemInstruction?: SystemInstruction,
  ): ChatMessage[] {
    const messages = this.aggregateSystemInstruction(systemInstruction, parser);
    for (const shot of this.fewShot) messages.push({ ...shot });
    for (const message of memory?.getMemory() ?? []) {
      const content = String(message.content);
      const last = messages.at(-1);
      if (message.sender === name) messages.push({ role: 'assistant', content });
      else if (last?.role === 'user') last.content += content;
      else messages.push({ role: 'user', content });
    }
    return messages;
  }
}

export function main(): void {
  heading('Custom aggregation: few-shot examples', describeModel());
  const llm = pickLLM(['【多云转晴，夜间有轻微降温】']);
  const agent = new Agent({
    llm,
    aggregator: new FewShotAggregator([
      { role: 'user', content: '今天天气' },
      { role: 'assistant', content: '【晴】' },
    ]),
  });
  const reply = agent.call(new AgentMessage({ sender: 'user', content: '昨天天气' }));
  show('reply', reply);
  if ('calls' in llm) {
    console.log('what the model was sent:');
    for (const message of (llm as { calls: { messages: ChatMessage[] }[] }).calls[0]!.messages) {
      console.log(`  ${message.role}: ${message.content}`);
    }
  }
}

if (isMain(import.meta.url)) main();
