export {
  explainToken,
  type Explanation,
  type ExplainOptions,
  type ExplainVerdict,
} from './explain.ts'
export {explanationJson, renderExplanation} from './render.ts'
export {
  providersFromOidcFlags,
  providersFromServeConfig,
  readBounded,
  readToken,
  type ProviderSource,
} from './source.ts'
