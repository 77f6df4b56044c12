/**
 * MCP both ways: use a third-party MCP server's tools as a lagent toolkit, and serve lagent tools to any MCP
 * client. The third-party server is `@modelcontextprotocol/server-everything`, started over stdio from
 * node_modules; our own server runs over Streamable HTTP on a free local port, and MCPToolkit calls it back.
 * Needs the optional peer `@modelcontextprotocol/sdk` and the server it starts:
 * `npm install @modelcontextprotocol/sdk @modelcontextprotocol/server-everything`.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { tool } from 'lagent-ts';
import { MCPToolkit, serveMCP } from 'lagent-ts/mcp';
import { z } from 'zod';
import { heading, isMain } from './shared/print';

/** The everything server's entry point, run with this Node. */
function everythingServer(): string {
  const manifest = createRequire(import.meta.url).resolve(
    '@modelcontextprotocol/server-everything/package.json',
  );
  return join(dirname(manifest), 'dist/index.js');
}

export async function main(): Promise<void> {
  heading('MCP client: server-everything over stdio');
  const everything = await MCPToolkit.connect({
    command: process.execPath,
    args: [everythingServer(), 'stdio'],
    name: 'everything',
    stderr: 'ignore',
  });
  const pid = everything.pid;
  try {
    console.log(
      `${everything.serverInfo.title ?? everything.serverInfo.name}: ${everything.apis.size} tools`,
    );
    console.log(
      'OpenAI name of get-sum:',
      everything.toOpenAITools().find((t) => t.function.name.endsWith('get-sum'))?.function.name,
    );
    console.log('get-sum(20, 22) ->', (await everything.call({ a: 20, b: 22 }, 'get-sum')).toText());
    console.log('get-sum("twenty") ->', (await everything.call({ a: 'twenty' }, 'get-sum')).toText());
  } finally {
    await everything.close();
  }
  console.log(`server-everything (pid ${pid}) stopped`);

  heading('MCP server: a lagent tool over Streamable HTTP');
  const weather = tool({
    name: 'weather',
    description: 'The weather in a city',
    parameters: z.object({ city: z.string().describe('the city') }),
    run: ({ city }) => `Sunny in ${city}, 21 °C`,
  });
  const server = await serveMCP({ actions: [weather], transport: 'http', port: 0, name: 'lagent-weather' });
  console.log('serving at', server.url);
  const remote = await MCPToolkit.connect({ url: server.url!, name: 'remote' });
  try {
    console.log('remote tools:', [...remote.apis.keys()].join(', '));
    console.log('remote.weather(Paris) ->', (await remote.call({ city: 'Paris' }, 'weather')).toText());
  } finally {
    await remote.close();
    await server.close();
  }
}

if (isMain(import.meta.url)) await main();
