import { EventEncoder } from '@ag-ui/encoder';
import { describe, expect, it } from 'vitest';
import { encodeSSE } from '#src/distributed/protocols/ag-ui';

// The AG-UI route writes the frames of its per-chunk events itself (the encoder's schema walk costs a third of a
// streamed reply's time): they must be the encoder's own frames, byte for byte.
describe('AG-UI frames of per-chunk events', () => {
  it('are what EventEncoder.encodeSSE writes', () => {
    const encoder = new EventEncoder();
    const events = [
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm-1', delta: 'héllo "quoted"\n\u2028' },
      { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r-1', delta: '' },
      {
        type: 'TOOL_CALL_ARGS',
        toolCallId: 'researcher:call_1',
        delta: '{"path":"/tmp/a"}',
        subagentRunId: 's-1',
      },
    ];
    for (const event of events)
      expect(encodeSSE(encoder, event as never)).toBe(encoder.encodeSSE(event as never));
    const other = { type: 'RUN_STARTED', threadId: 't', runId: 'r' };
    expect(encodeSSE(encoder, other as never)).toBe(encoder.encodeSSE(other as never));
  });
});
