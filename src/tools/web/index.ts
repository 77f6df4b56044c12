// Web and search tools (issue 10): WebBrowser and its searchers, ArxivSearch, GoogleSearch, GoogleScholar, BINGMap
export {};
