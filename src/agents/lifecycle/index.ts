/*
 * One agent call, written once for every variant: its steps and settle (turn.ts, call-steps.ts), the async
 * agent's direct run of the same steps (direct-call.ts), events and spans (events.ts), and the built-in
 * forwards (builtin-forward.ts).
 */
export {
  askInFrame,
  buildChunk,
  buildPrompt,
  buildReply,
  type ForwardParts,
  MODEL_TURN,
  modelParams,
  reasoningChunk,
  registerPlainForward,
  requireLLM,
  streamedRequest,
  streamReader,
} from './builtin-forward';
export { agentCallSteps } from './call-steps';
export { callAsync } from './direct-call';
export { emitEvent, emitSafely, STREAM_LEFT } from './events';
export { needsDriving, toMessages } from './turn';
