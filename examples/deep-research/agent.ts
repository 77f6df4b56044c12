/**
 * The deep-research agent as an agent module for the CLI:
 *
 *   NODE_OPTIONS='--import tsx' npx lagent-ts serve --agent examples/deep-research/agent.ts
 *
 * The default export builds it on the configured model (the scripted mock unless OPENAI_API_KEY /
 * OPENAI_BASE_URL is set) against the local research web, which this module starts and which ends with the
 * process.
 */
import type { DeepResearchAgent } from './deep-research-agent';
import { startDeepResearch } from './setup';

/** A new deep-research agent and its research web. */
export async function agent(): Promise<DeepResearchAgent> {
  return (await startDeepResearch()).agent;
}

export default agent;
