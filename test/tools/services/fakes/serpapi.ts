import {
  type FakeHttpServer,
  type RecordedRequest,
  type Reply,
  replyWith,
  startFakeHttp,
} from '../../../helpers/http-server';
import { GOOD_KEY } from './keys';

/**
 * SerpApi (`GET /search.json?engine=...&api_key=...`) for the four Google Scholar engines, with bodies of the
 * documented shapes; a wrong key is a 401 with SerpApi's `{ error }`, a search that finds nothing a 200 whose
 * `error` says so (status Success, `organic_results_state: 'Fully empty'`).
 */
export function startFakeSerpApi(): Promise<FakeHttpServer> {
  return startFakeHttp(replyWith(answer));
}

const metadata = (status = 'Success') => ({
  search_metadata: { id: '6560f0a1', status, json_endpoint: 'https://serpapi.com/searches/6560f0a1.json' },
});
const EMPTY = "Google hasn't returned any results for this query.";

function article(index: number) {
  return {
    position: index,
    title: `Agents paper ${index}`,
    result_id: `RID${index}`,
    link: `https://example.org/paper/${index}`,
    snippet: `Paper ${index} studies language agents.`,
    publication_info: {
      summary: `A Author${index}, B Author - Journal of Agents, 202${index} - example.org`,
      authors: [{ name: `A Author${index}`, author_id: `AUTH${index}` }],
    },
    inline_links: {
      serpapi_cite_link: `https://serpapi.com/search.json?engine=google_scholar_cite&q=RID${index}`,
      // The fourth article has no "Cited by" link, as uncited articles do.
      ...(index === 4
        ? {}
        : { cited_by: { total: 100 * index, link: 'https://scholar.google.com/', cites_id: `C${index}` } }),
      versions: { total: 2, link: 'https://scholar.google.com/' },
    },
  };
}

function answer(request: RecordedRequest): Reply {
  if (request.path !== '/search.json' && request.path !== '/search') {
    return { status: 404, json: { error: 'Not found.' } };
  }
  const { engine, api_key: key } = request.query;
  if (!key) return { status: 401, json: { error: 'Missing api_key.' } };
  if (key !== GOOD_KEY) {
    return {
      status: 401,
      json: { error: 'Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key' },
    };
  }
  switch (engine) {
    case 'google_scholar': {
      const q = request.query.q;
      if (!q) return { status: 400, json: { error: 'Missing query `q` parameter.' } };
      if (q === 'nothing at all') {
        return {
          status: 200,
          json: { ...metadata(), search_information: { organic_results_state: 'Fully empty' }, error: EMPTY },
        };
      }
      return {
        status: 200,
        json: {
          ...metadata(),
          search_parameters: { engine, q },
          search_information: { organic_results_state: 'Results for exact spelling', total_results: 1200 },
          organic_results: [1, 2, 3, 4, 5].map(article),
        },
      };
    }
    case 'google_scholar_author': {
      if (request.query.author_id !== 'AUTH1') {
        return { status: 200, json: { ...metadata(), error: EMPTY } };
      }
      return {
        status: 200,
        json: {
          ...metadata(),
          author: {
            name: 'Ada Author',
            affiliations: 'University of Examples',
            email: 'Verified email at example.edu',
            website: 'https://ada.example.edu',
            interests: [{ title: 'Agents', link: 'https://scholar.google.com/' }],
          },
          articles: [1, 2, 3, 4].map((index) => ({
            title: `Ada's paper ${index}`,
            link: 'https://scholar.google.com/',
            citation_id: `AUTH1:${index}`,
            authors: `A Author, Coauthor ${index}`,
            publication: 'Journal of Agents',
            cited_by: { value: 10 * index },
            year: `${2020 + index}`,
          })),
        },
      };
    }
    case 'google_scholar_cite':
      return {
        status: 200,
        json: {
          ...metadata(),
          citations: [
            { title: 'MLA', snippet: `Author, Ada. "Paper ${request.query.q}." Journal of Agents (2021).` },
            { title: 'APA', snippet: `Author, A. (2021). Paper ${request.query.q}. Journal of Agents.` },
          ],
          links: [{ name: 'BibTeX', link: 'https://scholar.googleusercontent.com/scholar.bib' }],
        },
      };
    case 'google_scholar_profiles':
      if (request.query.mauthors === 'Nobody Known')
        return { status: 200, json: { ...metadata(), error: EMPTY } };
      return {
        status: 200,
        json: {
          ...metadata(),
          profiles: [
            {
              name: request.query.mauthors,
              link: 'https://scholar.google.com/citations?user=AUTH1',
              author_id: 'AUTH1',
              affiliations: 'University of Examples',
              cited_by: 1234,
            },
          ],
          pagination: { next_page_token: 'token-2' },
        },
      };
    default:
      return { status: 400, json: { error: `Unsupported \`${engine}\` search engine.` } };
  }
}
