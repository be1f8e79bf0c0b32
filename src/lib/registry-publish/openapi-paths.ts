/**
 * The write routes in the OpenAPI document (registry-api/openapi.ts builds the rest): publish and
 * status, with the answers docs/registry-publish.md describes.
 */
export interface WritePathParts {
  security: object[]
  registryParam: object
  serverNameParam: object
  common: Record<string, object | undefined>
  errorResponse: (description: string) => object
  json: (schema: object) => object
  ref: (name: string) => object
}

export function writePaths(p: WritePathParts): Record<string, object> {
  const refusals = {
    '403': p.errorResponse(
      'The registry policy does not permit it, or the registry has no managed source.',
    ),
    '415': p.errorResponse('The body is not `application/json`.'),
    '413': p.errorResponse('The body is larger than 256 KiB.'),
  }
  return {
    '/registry/{registry}/v0.1/publish': {
      post: {
        operationId: 'publishServer',
        summary:
          'Publish a new version of a server to the registry’s managed source; it is served when the answer arrives.',
        security: p.security,
        parameters: [p.registryParam],
        requestBody: {required: true, content: p.json(p.ref('ServerJson'))},
        responses: {
          '200': {
            description: 'The version as now served.',
            content: p.json(p.ref('ServerResponse')),
          },
          '400': {
            description:
              'The server.json is invalid: `errors` names each problem by JSON pointer. Also: not JSON, duplicate keys.',
            content: p.json(p.ref('SchemaErrors')),
          },
          '409': p.errorResponse(
            'This version is already published, or another source of the registry serves this name.',
          ),
          ...refusals,
          ...withoutKey(p.common, '400'),
        },
      },
    },
    '/registry/{registry}/v0.1/servers/{serverName}/versions/{version}/status': {
      patch: {
        operationId: 'setServerVersionStatus',
        summary: 'Set the status of one published version (`active`, `deprecated`, `deleted`).',
        security: p.security,
        parameters: [
          p.registryParam,
          p.serverNameParam,
          {
            name: 'version',
            in: 'path',
            required: true,
            description: 'An exact version (not `latest`).',
            schema: {type: 'string'},
          },
        ],
        requestBody: {
          required: true,
          content: p.json({
            type: 'object',
            required: ['status'],
            additionalProperties: false,
            properties: {status: {type: 'string', enum: ['active', 'deprecated', 'deleted']}},
          }),
        },
        responses: {
          '200': {
            description: 'The version as now served.',
            content: p.json(p.ref('ServerResponse')),
          },
          ...refusals,
          ...p.common,
        },
      },
    },
  }
}

export const SCHEMA_ERRORS = {
  type: 'object',
  required: ['error', 'errors'],
  properties: {
    error: {type: 'string'},
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['pointer', 'message'],
        properties: {
          pointer: {type: 'string', description: 'RFC 6901 JSON pointer into the document.'},
          message: {type: 'string'},
        },
      },
    },
  },
}

function withoutKey(
  o: Record<string, object | undefined>,
  key: string,
): Record<string, object | undefined> {
  const {[key]: _dropped, ...rest} = o
  return rest
}
