/**
 * The InternLM agents: the model calls plugins (`<|action_start|><|plugin|>` + JSON) and a code interpreter
 * (`<|action_start|><|interpreter|>` + code), each ended by `<|action_end|>`; results come back in the
 * `environment` role. The streaming variant marks its chunks with Lagent's stream states, and MathCoder is
 * the interpreter-only variant for math. Code runs in a real sandboxed Python session (`IPythonInteractive`)
 * when Python 3 is installed, else in a stand-in that says how to get it.
 * Runs on the built-in mock model, or on a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set.
 */
import {
  AgentForInternLM,
  AgentStatusCode,
  type BaseLLM,
  MathCoder,
  StreamingAgentForInternLM,
  tool,
} from 'lagent-ts';
import type { MockResponses } from 'lagent-ts/testing';
import { z } from 'zod';
import { describeModel, pickLLM, usesRealModel } from './shared/model';
import { heading, isMain } from './shared/print';
import { pythonInterpreter } from './shared/python';

const weather = tool({
  name: 'Weather',
  description: 'Current weather of a city',
  parameters: z.object({ city: z.string().describe('City name') }),
  run: ({ city }) => `${city}: sunny, 21°C`,
});

/** The real IPythonInteractive when Python runs here, else a stand-in that says how to get Python. */
let interpreter: ReturnType<typeof pythonInterpreter>;

/**
 * InternLM models know the call format from training; other models are told it. The model stops at
 * `<|action_end|>`, as Lagent configures it, so that a call is followed by its result.
 */
function internLM(script: MockResponses): BaseLLM {
  const llm = pickLLM(script);
  llm.genParams.stopWords.push('<|action_end|>');
  return llm;
}

const FORMAT_HINT =
  'To call a plugin, write <|action_start|><|plugin|>, a new line, {"name": ..., "parameters": {...}}, then <|action_end|>. ' +
  'To run Python, write <|action_start|><|interpreter|>, a new line, the code, then <|action_end|>.';
const template = usesRealModel() ? FORMAT_HINT : undefined;

function pluginsAndCode(): void {
  heading('AgentForInternLM: a plugin and the interpreter', describeModel());
  const llm = internLM([
    'Let me check the weather first.<|action_start|><|plugin|>\n{"name": "Weather", "parameters": {"city": "Paris"}}<|action_end|>\n',
    'Now the temperature in Fahrenheit.<|action_start|><|interpreter|>\nprint(21 * 9 / 5 + 32)<|action_end|>\n',
    'It is sunny in Paris, 21°C (69.8°F).',
  ]);
  const agent = new AgentForInternLM({ llm, plugins: [weather], interpreter, template, language: 'en' });
  const reply = agent.call('What is the weather in Paris, in Fahrenheit?');
  console.log(`answer: ${reply.content}`);
  console.log(`stateDict keys: ${Object.keys(agent.stateDict()).join(', ')}`);
  for (const message of agent.agent.memory!.getMemory()) {
    console.log(`* ${message.sender}: ${String(message.content).replace(/\n/g, '\n    ')}`);
  }
}

function streaming(): void {
  heading('StreamingAgentForInternLM: chunks and their stream states');
  const llm = internLM([
    'A quick computation.<|action_start|><|interpreter|>\nprint(2 ** 10)<|action_end|>\n',
    'Two to the tenth is 1024.',
  ]);
  const agent = new StreamingAgentForInternLM({ llm, interpreter, template, language: 'en' });
  const names = Object.fromEntries(Object.entries(AgentStatusCode).map(([name, code]) => [code, name]));
  let previous: number | undefined;
  for (const chunk of agent.call('What is 2 ** 10?')) {
    if (chunk.streamState !== previous) process.stdout.write(`\n[${names[chunk.streamState]}] `);
    previous = chunk.streamState;
    process.stdout.write(
      chunk.streamState === AgentStatusCode.END ? String(chunk.content) : (chunk.delta ?? ''),
    );
  }
  console.log();
}

function mathCoder(): void {
  heading('MathCoder: reasoning and code for math');
  const llm = internLM([
    'A multiple and a factor of 63 can only both be ±63.<|action_start|><|interpreter|>\nprint(63 * -63)<|action_end|>\n',
    'The product of the two numbers is $\\boxed{-3969}$.',
  ]);
  const coder = new MathCoder({ llm, interpreter, template });
  const reply = coder.call(
    'Marie is thinking of a multiple of 63, while Jay is thinking of a factor of 63. They are thinking of the same number, which may be positive or negative. Find the product of the two possibilities.',
  );
  console.log(reply.content);
}

export function main(): void {
  interpreter = pythonInterpreter();
  try {
    pluginsAndCode();
    streaming();
    mathCoder();
  } finally {
    interpreter.close();
  }
}

if (isMain(import.meta.url)) main();
