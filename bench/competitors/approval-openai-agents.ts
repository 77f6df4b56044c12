import { Agent, Runner, RunState, tool } from '@openai/agents-core';
import { z } from 'zod';
import { ScriptedToolAgentsModel } from './openai-agents';

/** `Weather` with `needsApproval: true`: a run stops at its call until the call is approved. */
const approvalWeather = tool({
  name: 'Weather',
  description: 'Current weather of a city',
  parameters: z.object({ city: z.string() }),
  needsApproval: true,
  execute: ({ city }) => `Sunny in ${city}, 21 °C`,
});

/** An agent with the approval tool and the scripted tool model (`Weather` call, then text); tracing off. */
export function agentsApprovalSetup() {
  const agent = new Agent({
    name: 'bench',
    instructions: 'You are terse.',
    model: new ScriptedToolAgentsModel('Sunny in Paris.'),
    tools: [approvalWeather],
  });
  const runner = new Runner({ tracingDisabled: true });
  return { agent, runner };
}

/**
 * One paused-and-resumed turn as OpenAI Agents JS documents it: `run` stops with `result.interruptions`,
 * the run state is serialized (`state.toString()`) and read back (`RunState.fromString`), the call is
 * approved (`state.approve`) and `run(agent, state)` runs the tool and the last model turn.
 */
export async function agentsApprovalTurn({ agent, runner }: ReturnType<typeof agentsApprovalSetup>) {
  const paused = await runner.run(agent, 'Weather in Paris?');
  if (paused.interruptions.length !== 1) throw new Error('the run did not pause');
  const state = await RunState.fromString(agent, paused.state.toString());
  for (const interruption of state.getInterruptions()) state.approve(interruption);
  const done = await runner.run(agent, state);
  if (done.finalOutput !== 'Sunny in Paris.')
    throw new Error(`unexpected output ${String(done.finalOutput)}`);
  return done.finalOutput;
}
