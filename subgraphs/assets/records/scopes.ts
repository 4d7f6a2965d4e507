/** The key scopes of the Assets area: what each route and service method asks of the caller's key. */
export const SCOPES = {
  read: 'assets:read',
  write: 'assets:write',
  process: 'assets:process',
  generate: 'assets:generate',
  publish: 'assets:publish',
  admin: 'assets:admin',
} as const;
