/**
 * Flexible Response Formatting: an output parser turns the model's text into `formatted`.
 * A `ToolParser` finds a fenced Python call in the model's text, a `JSONParser` validates structured output.
 * Runs on the built-in mock model, or on a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set.
 */
import { Agent, AgentMessage, JSONParser, ParseError, ToolParser, ToolStatusCode } from 'lagent-ts';
import { z } from 'zod';
import { describeModel, pickLLM } from './shared/model';
import { heading, isMain } from './shared/print';

const QUESTION =
  'Marie is thinking of a multiple of 63, while Jay is thinking of a factor of 63. They happen to be thinking of ' +
  'the same number. There are two possibilities for the number that each of them is thinking of, one positive and ' +
  'one negative. Find the product of these two numbers.';

const SCRIPTED_REPLY =
  '首先，我们需要找出63的所有正因数和负因数。\n\n下面是Python代码实现：\n\n```python\n' +
  'positive_factors = [1, 3, 7, 9, 21, 63]\nnegative_factors = [-f for f in positive_factors]\n' +
  'print(63 / positive_factors[0] * (-63 / negative_factors[0]))\n```\n这段代码的输出就是答案。';

export function main(): void {
  heading('Flexible response formatting: ToolParser', describeModel());
  const llm = pickLLM([SCRIPTED_REPLY, '```json\n{"city": "Paris", "days": 3}\n```']);
  // The model stops when the code block closes (a stop word), so the parser accepts a call without its end.
  llm.genParams.stopWords.push('\n```\n');
  const parser = new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' });
  const agent = new Agent({ llm, template: '逐步分析并编写Python代码解决以下问题。', outputFormat: parser });

  const reply = agent.call(new AgentMessage({ sender: 'user', content: QUESTION }));
  console.log(JSON.stringify(reply.toJSON(), null, 4));
  const response = reply.formatted!; // a ToolResponse<string>, typed by the parser
  const status = Object.entries(ToolStatusCode).find(([, code]) => code === response.status)?.[0];
  console.log(`\ntool type: ${response.toolType}   status: ${status}`);
  console.log(`re-rendered for the prompt history (formatResponse):\n${parser.formatResponse(response)}`);

  heading('Structured output: JSONParser');
  const trip = new JSONParser({
    schema: z.object({
      city: z.string().describe('Where to go'),
      days: z.number().int().default(1).describe('Length of the stay'),
    }),
  });
  console.log('format instruction shown to the model:');
  console.log(trip.formatInstruction());
  const planner = new Agent({ llm, template: trip.formatInstruction(), outputFormat: trip });
  const plan = planner.call('Plan a short trip.', { stopWords: [] });
  console.log('\nparsed:', plan.formatted);
  try {
    trip.parseResponse('{"days": "three"}');
  } catch (error) {
    if (error instanceof ParseError) console.log(`\nbad output gives a ParseError:\n  ${error.message}`);
  }
}

if (isMain(import.meta.url)) main();
