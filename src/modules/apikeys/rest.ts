/**
 * REST bindings of the apikeys module, in domain form: the router maps names and applies the
 * envelopes and self links the spec declares (src/http/rest.ts). REST answers a created or rotated
 * key as its record plus `key`; GraphQL as `{ key, apiKey }` (`x-graphql-shape: own`). Those
 * responses are `bare`: Part 1 shows their `_links.self` as an object `{ href }` (the domain name of
 * `_links` is `Links`, by the one snake ⇄ camel mapping).
 */
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { ApiKeysService } from './service';

/** `{ data, _links: { self: { href } } }` in domain form. */
const created = <T extends { id: string }>(base: string, data: T) => ({ data, Links: { self: { href: `${base}/${data.id}` } } });

export function createApiKeysRest(service: ApiKeysService) {
  return bindRest({
    apiKeyAssignablePermissions: async ({ query }) => service.assignablePermissions(query.kind),
    userApiKeys: (_r, context) => service.userApiKeys(context.auth),
    async createUserApiKey({ body }, context) {
      const made = await service.createUserApiKey(context.auth, body);
      return created('/v1/api-keys', { ...made.apiKey, key: made.key });
    },
    updateUserApiKey: ({ params, body }, context) => service.updateUserApiKey(context.auth, params.id, body.label),
    async rotateUserApiKey({ params }, context) {
      const rotated = await service.rotateUserApiKey(context.auth, params.id);
      return created('/v1/api-keys', { ...rotated.apiKey, key: rotated.key });
    },
    deleteUserApiKey: ({ params }, context) => service.deleteUserApiKey(context.auth, params.id),
    accountServiceKeys: (_r, context) => service.accountServiceKeys(context.auth),
    async createAccountServiceKey({ body }, context) {
      const made = await service.createAccountServiceKey(context.auth, body);
      return created('/v1/service-keys', { ...made.serviceKey, key: made.key });
    },
    updateAccountServiceKey: ({ params, body }, context) => service.updateAccountServiceKey(context.auth, params.id, body.label),
    async rotateAccountServiceKey({ params }, context) {
      const rotated = await service.rotateAccountServiceKey(context.auth, params.id);
      return created('/v1/service-keys', { ...rotated.serviceKey, key: rotated.key });
    },
    deleteAccountServiceKey: ({ params }, context) => service.deleteAccountServiceKey(context.auth, params.id),
    adminAccountApiKeys: ({ params }) => service.adminAccountApiKeys(params.accountId),
    adminUserApiKeys: ({ params }) => service.adminUserApiKeys(params.userId),
    adminUpdateApiKey: ({ params, body }, context) => service.adminUpdateApiKey(context.auth, params.kind, params.id, body),
    async adminRotateApiKey({ params }, context) {
      const rotated = await service.adminRotateApiKey(context.auth, params.kind, params.id);
      return rotated.apiKey.kind === 'PERSONAL' ? { key: rotated.key, apiKey: rotated.apiKey } : { key: rotated.key, serviceKey: rotated.apiKey };
    },
    async adminDeleteApiKey({ params }, context) {
      await service.adminDeleteApiKey(context.auth, params.kind, params.id);
      return SUCCESS;
    },
    adminSystemKeyPermissions: async () => service.systemKeyPermissions(),
    adminSystemKeys: () => service.adminSystemKeys(),
    adminCreateSystemKey: async ({ body }, context) => created('/v1/admin/system-keys', await service.adminCreateSystemKey(context.auth, body)),
    async adminDeleteSystemKey({ params }, context) {
      await service.adminDeleteSystemKey(context.auth, params.id);
      return SUCCESS;
    },
  });
}
