import {OFFICIAL_META_KEY} from '../registry/types.ts'
import {DEFAULT_LIMIT, MAX_LIMIT} from './query.ts'
import {SCHEMA_ERRORS, writePaths} from '../registry-publish/openapi-paths.ts'
import {KINDS, REGISTRY_TYPES, TRANSPORTS} from '../registry/traits.ts'

/**
 * The OpenAPI 3.1 document served at `GET /openapi.json` (contract §1): every route of the main
 * port, its parameters, response schemas and the bearer security scheme. Built once at startup.
 */
export interface OpenApiOptions {
  version: string
  /** In oauth mode the registry routes require a bearer token; anonymous mode documents none. */
  oauth: boolean
  registries: string[]
}

const json = (schema: object) => ({'application/json': {schema}})
const ref = (name: string) => ({$ref: `#/components/schemas/${name}`})
const errorResponse = (description: string) => ({description, content: json(ref('Error'))})

export function buildOpenApi(opts: OpenApiOptions): object {
  const security = opts.oauth ? [{bearerAuth: []}] : []
  const authErrors = opts.oauth
    ? {
        '401': {
          description:
            'Missing or invalid bearer token. `WWW-Authenticate` links the protected-resource metadata (RFC 9728 §5.1).',
          headers: {'WWW-Authenticate': {schema: {type: 'string'}}},
          content: json(ref('Error')),
        },
      }
    : {}
  const registryParam = {
    name: 'registry',
    in: 'path',
    required: true,
    description: 'Registry name (a DNS label).',
    schema: {type: 'string', ...(opts.registries.length ? {examples: opts.registries} : {})},
  }
  const serverNameParam = {
    name: 'serverName',
    in: 'path',
    required: true,
    description: 'Server name `namespace/name`, URL-encoded (`io.example%2Fweather`).',
    schema: {type: 'string', minLength: 3, maxLength: 200},
  }
  const common = {
    '400': errorResponse('A parameter is invalid; the message names it.'),
    ...authErrors,
    '404': errorResponse('`registry not found` or `not found`.'),
    '500': errorResponse('`internal server error`.'),
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'toolgate MCP registry API',
      version: opts.version,
      description:
        'MCP registry API v0.1 served by `toolgate serve`, one API per configured registry.',
    },
    paths: {
      '/registry/{registry}/v0.1/servers': {
        get: {
          operationId: 'listServers',
          summary: 'List server versions, ordered by name then version, with keyset pagination.',
          security,
          parameters: [
            registryParam,
            {
              name: 'cursor',
              in: 'query',
              description: 'Opaque `metadata.nextCursor` of the previous page.',
              schema: {type: 'string'},
            },
            {
              name: 'limit',
              in: 'query',
              description: 'Page size.',
              schema: {type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT},
            },
            {
              name: 'search',
              in: 'query',
              description: 'Case-insensitive substring of name, title or description.',
              schema: {type: 'string'},
            },
            {
              name: 'updated_since',
              in: 'query',
              description: 'Only versions updated strictly after this RFC 3339 instant.',
              schema: {type: 'string', format: 'date-time'},
            },
            {
              name: 'version',
              in: 'query',
              description: 'An exact version, or `latest`.',
              schema: {type: 'string'},
            },
            {
              name: 'transport',
              in: 'query',
              description: 'Only versions offering this transport (a package’s or a remote’s).',
              schema: {type: 'string', enum: Object.keys(TRANSPORTS)},
            },
            {
              name: 'type',
              in: 'query',
              description: 'Only versions with packages (`package`) or with remotes (`remote`).',
              schema: {type: 'string', enum: Object.keys(KINDS)},
            },
            {
              name: 'registryType',
              in: 'query',
              description: 'Only versions with a package from this package registry.',
              schema: {type: 'string', enum: Object.keys(REGISTRY_TYPES)},
            },
          ],
          responses: {
            '200': {description: 'A page of servers.', content: json(ref('ServerList'))},
            ...common,
          },
        },
      },
      '/registry/{registry}/v0.1/servers/{serverName}/versions': {
        get: {
          operationId: 'listServerVersions',
          summary: 'All versions of one server.',
          security,
          parameters: [registryParam, serverNameParam],
          responses: {
            '200': {description: 'The versions.', content: json(ref('ServerList'))},
            ...common,
          },
        },
      },
      '/registry/{registry}/v0.1/servers/{serverName}/versions/{version}': {
        get: {
          operationId: 'getServerVersion',
          summary: 'One version of one server (`latest` allowed).',
          security,
          parameters: [
            registryParam,
            serverNameParam,
            {
              name: 'version',
              in: 'path',
              required: true,
              description: 'Exact version or `latest`.',
              schema: {type: 'string'},
            },
          ],
          responses: {
            '200': {description: 'The version.', content: json(ref('ServerResponse'))},
            ...common,
          },
        },
      },
      ...writePaths({security, registryParam, serverNameParam, common, errorResponse, json, ref}),
      '/.well-known/oauth-protected-resource': {
        get: {
          operationId: 'getProtectedResourceMetadata',
          summary:
            'OAuth 2.0 protected-resource metadata (RFC 9728). Public. 404 in anonymous mode.',
          security: [],
          responses: {
            '200': {description: 'The metadata.', content: json(ref('ProtectedResourceMetadata'))},
            '404': errorResponse('Anonymous mode: there is no protected resource.'),
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'getOpenApi',
          summary: 'This document. Public.',
          security: [],
          responses: {
            '200': {
              description: 'OpenAPI 3.1 document.',
              content: {'application/json': {schema: {type: 'object'}}},
            },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An OAuth 2.0 access token from one of the configured providers (JWT or opaque, RFC 6750).',
        },
      },
      schemas: {
        Error: {type: 'object', required: ['error'], properties: {error: {type: 'string'}}},
        SchemaErrors: SCHEMA_ERRORS,
        ServerJson: {
          type: 'object',
          description: 'An MCP server.json document.',
          required: ['name', 'version'],
          properties: {
            $schema: {type: 'string'},
            name: {type: 'string', minLength: 3, maxLength: 200},
            version: {type: 'string'},
            description: {type: 'string'},
            title: {type: 'string'},
            websiteUrl: {type: 'string', format: 'uri'},
            icons: {type: 'array', items: {type: 'object'}},
            repository: {type: 'object'},
            packages: {type: 'array', items: {type: 'object'}},
            remotes: {type: 'array', items: {type: 'object'}},
            _meta: {type: 'object'},
          },
        },
        OfficialMeta: {
          type: 'object',
          required: ['status', 'publishedAt', 'updatedAt', 'isLatest'],
          properties: {
            status: {type: 'string', enum: ['active', 'deprecated', 'deleted']},
            publishedAt: {type: 'string', format: 'date-time'},
            updatedAt: {type: 'string', format: 'date-time'},
            isLatest: {type: 'boolean'},
          },
        },
        ServerResponse: {
          type: 'object',
          required: ['server', '_meta'],
          properties: {
            server: ref('ServerJson'),
            _meta: {
              type: 'object',
              required: [OFFICIAL_META_KEY],
              properties: {[OFFICIAL_META_KEY]: ref('OfficialMeta')},
            },
          },
        },
        ServerList: {
          type: 'object',
          required: ['servers', 'metadata'],
          properties: {
            servers: {type: 'array', items: ref('ServerResponse')},
            metadata: {
              type: 'object',
              required: ['count'],
              properties: {
                count: {type: 'integer', description: 'Number of servers in this page.'},
                nextCursor: {type: 'string', description: 'Absent on the last page.'},
              },
            },
          },
        },
        ProtectedResourceMetadata: {
          type: 'object',
          required: ['resource', 'authorization_servers', 'bearer_methods_supported'],
          properties: {
            resource: {type: 'string', format: 'uri'},
            authorization_servers: {type: 'array', items: {type: 'string', format: 'uri'}},
            bearer_methods_supported: {type: 'array', items: {type: 'string', enum: ['header']}},
            resource_documentation: {type: 'string', format: 'uri'},
          },
        },
      },
    },
  }
}
