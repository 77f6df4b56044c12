/**
 * Models as Agents and Memory as State: one agent, one question, and a look at what it remembers.
 * Runs on the built-in mock model, or on a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set.
 */
import { Agent, AgentMessage } from 'lagent-ts';
import { describeModel, pickLLM } from './shared/model';
import { heading, isMain, show } from './shared/print';

export function main(): void {
  heading('Quickstart: models as agents', describeModel());
  const llm = pickLLM(['急']);
  llm.genParams.stopWords.push('<|im_end|>');
  const agent = new Agent({ llm, template: 'Answer with exactly one of three characters: 典, 孝, 急.' });

  const reply = agent.call(new AgentMessage({ sender: 'user', content: '今天天气情况' }));
  show('reply', reply);

  heading('Memory as state');
  console.log('agent.memory.getMemory():');
  for (const message of agent.memory!.getMemory()) console.log(`  ${message.sender}: ${message.content}`);
  console.log("agent.stateDict()['memory']:");
  console.log(JSON.stringify(agent.stateDict().memory, null, 2).replace(/^/gm, '  '));

  agent.reset();
  console.log(`after agent.reset(): ${agent.memory!.getMemory().length} messages in session 0`);
}

if (isMain(import.meta.url)) main();
