/**
 * REST bindings of the developer module, in domain form: the router maps names and applies the
 * declared envelopes and self links (src/http/rest.ts). A created developer key is answered as its
 * record plus `key` with `_links.self` as `{ href }`, as the other key kinds are.
 */
import { bindRest } from '../../http/rest';
import type { DeveloperService } from './service';

export function createDeveloperRest(service: DeveloperService) {
  return bindRest({
    // developer keys
    developerApiKeys: (_r, context) => service.developerApiKeys(context.auth),
    async createDeveloperApiKey({ body }, context) {
      const made = await service.createDeveloperApiKey(context.auth, body);
      return { data: { ...made.developerApiKey, key: made.key }, Links: { self: { href: `/v1/developer/api-keys/${made.developerApiKey.id}` } } };
    },
    updateDeveloperApiKey: ({ params, body }, context) => service.updateDeveloperApiKey(context.auth, params.id, body.label),
    revokeDeveloperApiKey: ({ params }, context) => service.revokeDeveloperApiKey(context.auth, params.id),
    // applications
    myDeveloperApplication: (_r, context) => service.myDeveloperApplication(context.auth),
    submitDeveloperApplication: ({ body }, context) => service.submitDeveloperApplication(context.auth, body),
    adminDeveloperApplications: ({ query, paging }) => service.adminDeveloperApplications(query.status, paging),
    adminDeveloperApplication: ({ params }) => service.adminDeveloperApplication(params.id),
    adminApproveDeveloperApplication: ({ params, body }, context) => service.adminApproveDeveloperApplication(context.auth, params.id, body?.notes),
    adminRejectDeveloperApplication: ({ params, body }, context) => service.adminRejectDeveloperApplication(context.auth, params.id, body.notes),
    // verification
    developerVerificationStatus: (_r, context) => service.developerVerificationStatus(context.auth),
    submitDeveloperVerification: ({ body }, context) => service.submitDeveloperVerification(context.auth, body),
    adminDeveloperVerifications: ({ query, paging }) => service.adminDeveloperVerifications(query.status, paging),
    adminDeveloperVerification: ({ params }) => service.adminDeveloperVerification(params.id),
    adminApproveDeveloperVerification: ({ params, body }, context) => service.adminReviewDeveloperVerification(context.auth, params.id, 'verified', body?.notes),
    adminRejectDeveloperVerification: ({ params, body }, context) => service.adminReviewDeveloperVerification(context.auth, params.id, 'rejected', body.notes),
    // teams
    allTeamPermissions: async () => service.allTeamPermissions(),
    createDeveloperTeam: ({ body }, context) => service.createDeveloperTeam(context.auth, body),
    myDeveloperTeams: (_r, context) => service.myDeveloperTeams(context.auth),
    developerTeam: ({ params }, context) => service.developerTeam(context.auth, params.id),
    updateDeveloperTeam: ({ params, body }, context) => service.updateDeveloperTeam(context.auth, params.id, body),
    deleteDeveloperTeam: ({ params }, context) => service.deleteDeveloperTeam(context.auth, params.id),
    developerTeamMembers: ({ params }, context) => service.developerTeamMembers(context.auth, params.id),
    updateDeveloperTeamMemberRole: ({ params, body }, context) => service.updateDeveloperTeamMemberRole(context.auth, params.id, params.memberId, body.roleId),
    removeDeveloperTeamMember: ({ params }, context) => service.removeDeveloperTeamMember(context.auth, params.id, params.memberId),
    createDeveloperTeamInvite: ({ params, body }, context) => service.createDeveloperTeamInvite(context.auth, params.id, body),
    developerTeamInvites: ({ params }, context) => service.developerTeamInvites(context.auth, params.id),
    revokeDeveloperTeamInvite: ({ params }, context) => service.revokeDeveloperTeamInvite(context.auth, params.id, params.inviteId),
    developerTeamInvite: ({ params }) => service.developerTeamInvite(params.code),
    acceptDeveloperTeamInvite: ({ params }, context) => service.acceptDeveloperTeamInvite(context.auth, params.code),
    developerTeamRoles: ({ params }, context) => service.developerTeamRoles(context.auth, params.id),
    createDeveloperTeamRole: ({ params, body }, context) => service.createDeveloperTeamRole(context.auth, params.id, body),
    updateDeveloperTeamRole: ({ params, body }, context) => service.updateDeveloperTeamRole(context.auth, params.id, params.rid, body),
    deleteDeveloperTeamRole: ({ params }, context) => service.deleteDeveloperTeamRole(context.auth, params.id, params.rid),
  });
}
