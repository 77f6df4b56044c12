/**
 * Representative JSON documents, with what Python prints for them (text-python.test.ts checks them against
 * python3).
 */
export const PYTHON_CASES: [string, string][] = [
  [
    '{"name":"search","parameters":{"query":"天气","n":3}}',
    '{"name": "search", "parameters": {"query": "天气", "n": 3}}',
  ],
  ['[1,[2,[3,{}]],[],{"a":[]}]', '[1, [2, [3, {}]], [], {"a": []}]'],
  [
    '{"text":"line\\nbreak \\"quoted\\" tab\\t back\\\\slash \\u0001 é 😀"}',
    '{"text": "line\\nbreak \\"quoted\\" tab\\t back\\\\slash \\u0001 é 😀"}',
  ],
  ['{"t":true,"f":false,"n":null}', '{"t": true, "f": false, "n": null}'],
  [
    '[0.5,-2.25,1e-05,0.0001,1.5e-7,123456.789,-0.001]',
    '[0.5, -2.25, 1e-05, 0.0001, 1.5e-07, 123456.789, -0.001]',
  ],
  ['[1e21,2.5e22,1e300,-1e-300]', '[1e+21, 2.5e+22, 1e+300, -1e-300]'],
  ['[1,-7,0,9007199254740991]', '[1, -7, 0, 9007199254740991]'],
  [
    '{"chart":{"type":"bar","data":{"labels":["一月","二月"],"values":[10,20]}}}',
    '{"chart": {"type": "bar", "data": {"labels": ["一月", "二月"], "values": [10, 20]}}}',
  ],
];
