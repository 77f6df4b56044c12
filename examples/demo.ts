/**
 * `npm run demo`: every ported example in turn, on the built-in mock model unless OPENAI_API_KEY or
 * OPENAI_BASE_URL points at a real endpoint.
 */
import { main as approval } from './approval';
import { main as blogger } from './blogger';
import { main as customAggregator } from './custom-aggregator';
import { main as dataVisualizer } from './data-visualizer';
import { main as deepResearch } from './deep-research/main';
import { main as functionCalling } from './function-calling';
import { main as internLMAgent } from './internlm-agent';
import { main as mcp } from './mcp';
import { main as queue } from './queue';
import { main as quickstart } from './quickstart';
import { main as react } from './react';
import { main as responseFormatting } from './response-formatting';
import { main as serve } from './serve';
import { main as toolCalling } from './tool-calling';

quickstart();
customAggregator();
responseFormatting();
toolCalling();
await blogger();
await functionCalling();
await approval();
await react();
internLMAgent();
await dataVisualizer();
await deepResearch();
await mcp();
await serve();
await queue();
console.log('\nAll examples ran. Each file in examples/ also runs on its own: npx tsx examples/<name>.ts');
