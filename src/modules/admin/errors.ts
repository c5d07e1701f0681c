/** The admin-roles module's messages (Part 1 "Errors" quotes them). */
export const adminMessages = {
  roleNotFound: 'Admin role not found',
  roleNameInUse: 'Role name already in use',
  systemRoleUndeletable: 'Cannot delete system admin role',
  systemRoleRename: 'Cannot rename system admin role',
  systemRoleKeeps: (permission: string) => `System admin role must keep permission: ${permission}`,
  invalidPermission: (permission: string) => `Invalid permission: ${permission}`,
  userNotFound: 'User not found',
  nameBlank: 'name must not be blank',
} as const;
