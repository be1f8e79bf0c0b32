/**
 * The server.json a publish must match: our JSON Schema (draft-07) of the MCP registry's
 * server.json as of its 2025-12-11 schema (the current one), checked with ajv. It holds what the official registry
 * refuses (name shape and length, a description of 1–100 characters, exact versions only, typed
 * packages and remotes with their transports) and lets unknown fields through, as the official
 * schema does at the top level, so a newer client's extra fields are not an error. A package's
 * `version` is optional (an OCI identifier carries its tag); when given it is one exact version.
 */
export const SERVER_SCHEMA_ID =
  'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json'

const exactVersion = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  // No whitespace or control characters: a version is part of URLs and of terminal output.
  pattern: '^[^\\s\\u0000-\\u001f\\u007f]+$',
  // "latest" is an API keyword; ranges (^1.2, ~1, >=1, 1.x, *) are not one version.
  not: {anyOf: [{const: 'latest'}, {pattern: '^[\\^~<>=*]'}, {pattern: '(^|\\.)[xX*](\\.|$)'}]},
}

const keyValueInputs = {
  type: 'array',
  maxItems: 100,
  items: {
    type: 'object',
    required: ['name'],
    properties: {
      name: {type: 'string', minLength: 1},
      description: {type: 'string'},
      value: {type: 'string'},
      default: {type: 'string'},
      isRequired: {type: 'boolean'},
      isSecret: {type: 'boolean'},
    },
  },
}

const transport = {
  type: 'object',
  required: ['type'],
  properties: {
    type: {enum: ['stdio', 'streamable-http', 'sse']},
    url: {type: 'string', minLength: 1},
    headers: keyValueInputs,
  },
  // Only stdio runs without a URL.
  if: {properties: {type: {const: 'stdio'}}},
  then: {},
  else: {required: ['url']},
}

const argumentList = {
  type: 'array',
  maxItems: 200,
  items: {
    type: 'object',
    required: ['type'],
    properties: {
      type: {enum: ['positional', 'named']},
      name: {type: 'string', minLength: 1},
      value: {type: 'string'},
      valueHint: {type: 'string'},
    },
    if: {properties: {type: {const: 'named'}}},
    then: {required: ['name']},
  },
}

export const SERVER_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: SERVER_SCHEMA_ID,
  type: 'object',
  required: ['name', 'description', 'version'],
  properties: {
    $schema: {type: 'string', format: 'uri'},
    name: {
      type: 'string',
      minLength: 3,
      maxLength: 200,
      pattern: '^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$',
    },
    title: {type: 'string', minLength: 1, maxLength: 100},
    description: {type: 'string', minLength: 1, maxLength: 100},
    version: exactVersion,
    websiteUrl: {type: 'string', format: 'uri'},
    repository: {
      type: 'object',
      required: ['url', 'source'],
      properties: {
        url: {type: 'string', format: 'uri'},
        source: {type: 'string', minLength: 1},
        id: {type: 'string'},
        subfolder: {type: 'string'},
      },
    },
    icons: {
      type: 'array',
      maxItems: 20,
      items: {
        type: 'object',
        required: ['src'],
        properties: {
          src: {type: 'string', format: 'uri', maxLength: 255},
          mimeType: {type: 'string'},
          sizes: {type: 'array', items: {type: 'string'}},
          theme: {enum: ['light', 'dark']},
        },
      },
    },
    packages: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        required: ['registryType', 'identifier', 'transport'],
        properties: {
          registryType: {type: 'string', minLength: 1},
          registryBaseUrl: {type: 'string', format: 'uri'},
          identifier: {type: 'string', minLength: 1},
          version: exactVersion,
          fileSha256: {type: 'string', pattern: '^[a-f0-9]{64}$'},
          runtimeHint: {type: 'string'},
          transport,
          runtimeArguments: argumentList,
          packageArguments: argumentList,
          environmentVariables: keyValueInputs,
        },
      },
    },
    remotes: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        required: ['type', 'url'],
        properties: {
          type: {enum: ['streamable-http', 'sse']},
          url: {type: 'string', minLength: 1},
          headers: keyValueInputs,
        },
      },
    },
    _meta: {type: 'object'},
  },
} as const
