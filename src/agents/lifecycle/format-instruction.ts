import type { OutputParser } from '../../prompts/output-parser';
import type { ChatMessage } from '../../schema/chat-message';

/**
 * The prompt with the output parser's format instruction in its system part, for a parser that asks for it
 * (`addsFormatInstruction`): text is appended to the leading system message (one is added when there is
 * none), messages go after the leading system messages. An instruction the system part already contains (a
 * `template` built from `parser.formatInstruction()`, as Lagent agents are written) is not added twice.
 * `prompt` is the aggregator's fresh list; its messages are replaced, not changed.
 */
export function withFormatInstruction(prompt: ChatMessage[], parser: OutputParser): ChatMessage[] {
  const instruction = parser.formatInstruction?.();
  if (instruction === undefined || instruction === '' || instruction.length === 0) return prompt;
  let systemEnd = 0;
  while (systemEnd < prompt.length && prompt[systemEnd]!.role === 'system') systemEnd++;
  const systemText = prompt
    .slice(0, systemEnd)
    .map((message) => message.content ?? '')
    .join('\n');
  if (typeof instruction === 'string') {
    if (systemText.includes(instruction)) return prompt;
    if (systemEnd === 0) prompt.unshift({ role: 'system', content: instruction });
    else {
      const last = prompt[systemEnd - 1]!;
      const content = last.content ? `${last.content}\n\n${instruction}` : instruction;
      prompt[systemEnd - 1] = { ...last, content };
    }
    return prompt;
  }
  const added = instruction.filter((message) => !systemText.includes(message.content ?? ''));
  prompt.splice(systemEnd, 0, ...added.map((message) => ({ ...message })));
  return prompt;
}
