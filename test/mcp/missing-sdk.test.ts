// Without @modelcontextprotocol/sdk installed, MCPToolkit and serveMCP say what to install.
import { afterEach, describe, expect, it, vi } from 'vitest';

describe('without the MCP SDK', () => {
  afterEach(() => {
    vi.doUnmock('@modelcontextprotocol/sdk/client/index.js');
    vi.doUnmock('@modelcontextprotocol/sdk/server/index.js');
    vi.doUnmock('re2js');
    vi.resetModules();
  });

  it('MCPToolkit.connect throws a ConfigurationError naming the package', async () => {
    vi.resetModules();
    vi.doMock('@modelcontextprotocol/sdk/client/index.js', () => {
      throw new Error("Cannot find package '@modelcontextprotocol/sdk'");
    });
    const { MCPToolkit } = await import('lagent-ts/mcp');
    const error = await MCPToolkit.connect({ command: 'unused' }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: 'ConfigurationError' });
    expect((error as Error).message).toContain('install @modelcontextprotocol/sdk to use MCPToolkit');
  });

  it('serveMCP throws a ConfigurationError naming the package', async () => {
    vi.resetModules();
    vi.doMock('@modelcontextprotocol/sdk/server/index.js', () => {
      throw new Error("Cannot find package '@modelcontextprotocol/sdk'");
    });
    const { serveMCP } = await import('lagent-ts/mcp');
    const { tool } = await import('#src/actions/tool');
    const { z } = await import('zod');
    const echo = tool({ name: 'echo', parameters: z.object({ text: z.string() }), run: ({ text }) => text });
    const error = await serveMCP({ actions: [echo], transport: 'http' }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: 'ConfigurationError' });
    expect((error as Error).message).toContain('install @modelcontextprotocol/sdk to use serveMCP');
  });

  it('MCPToolkit.connect without re2js throws a ConfigurationError naming it', async () => {
    vi.resetModules();
    vi.doMock('re2js', () => {
      throw new Error("Cannot find package 're2js'");
    });
    const { MCPToolkit } = await import('lagent-ts/mcp');
    const error = await MCPToolkit.connect({ command: 'unused' }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ name: 'ConfigurationError' });
    expect((error as Error).message).toContain('install re2js to use MCPToolkit (npm install re2js)');
  });

  it('importing lagent-ts/mcp loads no part of the SDK, nor re2js', async () => {
    vi.resetModules();
    vi.doMock('@modelcontextprotocol/sdk/client/index.js', () => {
      throw new Error('loaded at import time');
    });
    vi.doMock('@modelcontextprotocol/sdk/server/index.js', () => {
      throw new Error('loaded at import time');
    });
    vi.doMock('re2js', () => {
      throw new Error('loaded at import time');
    });
    await expect(import('lagent-ts/mcp')).resolves.toHaveProperty('MCPToolkit');
  });
});
