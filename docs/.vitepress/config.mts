import { defineConfig } from 'vitepress';

/**
 * The docs site (`npm run docs`): these guides, built by VitePress into `docs/.vitepress/dist/`, and the API
 * reference TypeDoc writes into `dist/api/` after it (see typedoc.json). The reference is plain HTML beside
 * the site, not VitePress pages: links to it open as ordinary pages (`target="_self"`, below), and its links
 * are checked by test/docs/site.test.ts, since VitePress builds before TypeDoc writes them.
 */
export default defineConfig({
  title: 'lagent-ts',
  description: 'PyTorch-style composition of LLM agents for TypeScript: a port of Lagent',
  lang: 'en-GB',
  lastUpdated: false,
  head: [['link', { rel: 'icon', type: 'image/svg+xml', href: '/logo.svg' }]],
  cleanUrls: false,
  // The reference is written after VitePress builds; the site test checks those links and their anchors.
  ignoreDeadLinks: [/^\/api\//],
  markdown: {
    config(md) {
      // Links into the TypeDoc reference leave the VitePress router: without a target, the router would look
      // for a VitePress page there and show its 404 page.
      const open = md.renderer.rules.link_open;
      md.renderer.rules.link_open = (tokens, index, options, env, self) => {
        const href = tokens[index]!.attrGet('href') ?? '';
        if (href.startsWith('/api/')) tokens[index]!.attrSet('target', '_self');
        return open ? open(tokens, index, options, env, self) : self.renderToken(tokens, index, options);
      };
    },
  },
  themeConfig: {
    logo: '/logo.svg',
    nav: [
      { text: 'Guide', link: '/guide/getting-started' },
      { text: 'API reference', link: '/api/index.html', target: '_self' },
      { text: 'Examples', link: '/guide/examples' },
    ],
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    sidebar: [
      {
        text: 'Introduction',
        items: [
          { text: 'Getting started', link: '/guide/getting-started' },
          { text: 'Examples', link: '/guide/examples' },
        ],
      },
      {
        text: 'Guides',
        items: [
          { text: 'Agents', link: '/guide/agents' },
          { text: 'Sessions and stores', link: '/guide/sessions-and-stores' },
          { text: 'Tools', link: '/guide/tools' },
          { text: 'Function calling and the prebuilt agents', link: '/guide/function-calling' },
          { text: 'Durable runs and approvals', link: '/guide/durable-runs' },
          { text: 'Budgets and guardrails', link: '/guide/budgets-and-guardrails' },
          { text: 'Interceptors', link: '/guide/interceptors' },
          { text: 'Models', link: '/guide/models' },
          { text: 'Prompts, parsers and context windows', link: '/guide/prompts-and-context' },
          { text: 'Observability', link: '/guide/observability' },
          { text: 'Serving: HTTP and the queue', link: '/guide/serving' },
          { text: 'Protocols: OpenAI, useChat, AG-UI, A2A', link: '/guide/protocols' },
          { text: 'Runs that outlive their connection', link: '/guide/background-runs' },
          { text: 'Memory', link: '/guide/memory' },
          { text: 'Retrieval', link: '/guide/retrieval' },
          { text: 'Memory beyond the transcript', link: '/guide/memory' },
          { text: 'Built-in tools and MCP', link: '/guide/built-in-tools' },
          { text: 'The command line', link: '/guide/cli' },
          { text: 'Testing your agents', link: '/guide/testing' },
          { text: 'Porting from Lagent', link: '/guide/porting-from-lagent' },
          { text: 'Security', link: '/guide/security' },
          { text: 'Performance', link: '/guide/performance' },
        ],
      },
      {
        text: 'Reference',
        items: [{ text: 'API reference', link: '/api/index.html', target: '_self' }],
      },
    ],
    footer: { message: 'Apache-2.0, as Lagent.' },
  },
});
