import {
  type FakeHttpServer,
  type RecordedRequest,
  type Reply,
  replyWith,
  startFakeHttp,
} from '../../../helpers/http-server';
import { GOOD_KEY } from './keys';

/**
 * Serper's Google search (`POST /search`, key in `X-API-KEY`, JSON body `{ q, num? }`), answering a few
 * queries with bodies of the documented shape: `searchParameters`, `answerBox`, `knowledgeGraph`, `organic`.
 */
export function startFakeSerper(): Promise<FakeHttpServer> {
  return startFakeHttp(replyWith(answer));
}

function organic(count: number, prefix: string) {
  return Array.from({ length: count }, (_, index) => ({
    title: `${prefix} result ${index + 1}`,
    link: `https://example.com/${prefix}/${index + 1}`,
    snippet: `${prefix} snippet ${index + 1}`,
    position: index + 1,
  }));
}

function answer(request: RecordedRequest): Reply {
  if (request.method !== 'POST' || request.path !== '/search') {
    return { status: 404, json: { message: 'Not found', statusCode: 404 } };
  }
  if (request.headers['x-api-key'] !== GOOD_KEY) {
    return { status: 403, json: { message: 'Unauthorized.', statusCode: 403 } };
  }
  let q: string;
  let num = 10;
  try {
    const body = JSON.parse(request.body) as { q?: unknown; num?: unknown };
    if (typeof body.q !== 'string') throw new Error('no q');
    q = body.q;
    if (typeof body.num === 'number') num = body.num;
  } catch {
    return { status: 400, json: { message: 'Query is required', statusCode: 400 } };
  }
  const searchParameters = { q, gl: 'us', hl: 'en', type: 'search', num, engine: 'google' };
  switch (q) {
    case 'capital of france':
      return {
        status: 200,
        json: {
          searchParameters,
          answerBox: { title: 'France / Capital', answer: 'Paris' },
          organic: organic(3, 'france'),
          credits: 1,
        },
      };
    case 'boiling point':
      return {
        status: 200,
        json: {
          searchParameters,
          answerBox: {
            title: 'Water',
            snippet: 'Water boils at 100 °C\nat sea level.',
            link: 'https://example.com/water',
          },
          organic: organic(2, 'water'),
        },
      };
    case 'tallest mountain':
      return {
        status: 200,
        json: {
          searchParameters,
          answerBox: { snippetHighlighted: ['Mount Everest', '8,849 m'] },
          organic: [],
        },
      };
    case 'apple inc':
      return {
        status: 200,
        json: {
          searchParameters,
          knowledgeGraph: {
            title: 'Apple',
            type: 'Technology company',
            website: 'http://www.apple.com/',
            description: 'Apple Inc. designs consumer electronics.',
            attributes: { Founded: 'April 1, 1976', CEO: 'Tim Cook' },
          },
          organic: [
            { ...organic(1, 'apple')[0], attributes: { Headquarters: 'Cupertino' } },
            ...organic(Math.max(num, 10), 'apple').slice(1),
          ],
          peopleAlsoAsk: [],
          relatedSearches: [],
        },
      };
    default:
      return { status: 200, json: { searchParameters, organic: [], credits: 1 } };
  }
}
