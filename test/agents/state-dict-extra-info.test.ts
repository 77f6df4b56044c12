import { AgentForInternLM, AgentMessage } from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { interpreterCall } from '../helpers/internlm-replies';
import { fakePython } from '../helpers/tools';

/** An agent whose last reply is a loop's max-turn reply (extraInfo `{ maxTurnReached, maxTurn }`). */
function stopped(): AgentForInternLM {
  const llm = new MockLLM({ responses: [interpreterCall('x = 1')] });
  const agent = new AgentForInternLM({ llm, interpreter: fakePython, maxTurn: 1 });
  agent.call('go');
  return agent;
}

describe("extra_info in Lagent's shape", () => {
  it("format: 'lagent' writes the library's extraInfo keys in snake_case; the default shape keeps camelCase", () => {
    const agent = stopped();
    expect(agent.stateDict(0, { format: 'lagent' }).memory!.at(-1)!.extra_info).toEqual({
      max_turn_reached: true,
      max_turn: 1,
    });
    expect(agent.stateDict().memory!.at(-1)!.extraInfo).toEqual({ maxTurnReached: true, maxTurn: 1 });
  });

  it('round-trips both ways: lagent-ts → Lagent → lagent-ts, and Lagent → lagent-ts → Lagent', () => {
    const agent = stopped();
    const saved = agent.stateDict(0, { format: 'lagent' });
    const other = stopped();
    other.reset();
    other.loadStateDict(saved, 0);
    expect(other.memory!.getMemory(0).at(-1)!.extraInfo).toEqual({ maxTurnReached: true, maxTurn: 1 });
    expect(other.stateDict(0, { format: 'lagent' })).toEqual(saved);

    // A dict as Python wrote it, with a key of the user's own that must stay as written.
    const fromPython = {
      memory: [
        {
          content: 'go',
          sender: 'user',
          formatted: null,
          extra_info: null,
          type: null,
          receiver: null,
          stream_state: 0,
        },
        {
          content: 'stopped',
          sender: 'AgentForInternLM',
          formatted: null,
          extra_info: { max_turn_reached: true, max_turn: 3, user_id: 7 },
          type: null,
          receiver: null,
          stream_state: 0,
        },
      ],
      'agent.memory': [],
    };
    other.loadStateDict(fromPython, 1);
    expect(other.memory!.getMemory(1).at(-1)!.extraInfo).toEqual({
      maxTurnReached: true,
      maxTurn: 3,
      user_id: 7,
    });
    expect(other.stateDict(1, { format: 'lagent' })).toEqual(fromPython);
  });

  it('leaves extraInfo the user set as it is, in both shapes', () => {
    const message = new AgentMessage({ content: 'x', extraInfo: { elapsedMs: 12, maxTurn: 2 } });
    const lagent = message.toJSON({ format: 'lagent' });
    expect(lagent.extra_info).toEqual({ elapsedMs: 12, maxTurn: 2 });
    expect(AgentMessage.from(lagent).extraInfo).toEqual({ elapsedMs: 12, maxTurn: 2 });
    const python = { content: 'x', extra_info: { max_turn: 2, note: 'n' } };
    expect(AgentMessage.from(python).extraInfo).toEqual({ max_turn: 2, note: 'n' });
    // Only Lagent-shaped input is renamed: a camelCase message keeps whatever keys it has.
    expect(AgentMessage.from({ content: 'x', extraInfo: { max_turn_reached: true } }).extraInfo).toEqual({
      max_turn_reached: true,
    });
  });
});
