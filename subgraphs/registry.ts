import identity from './identity';
import publisher from './publisher';

/**
 * Every area of the platform. The composition root, the CLI, the bridge's routes and the router's
 * feeds loop over this list; adding an area is its folder plus one line here.
 */
export const AREAS = [identity, publisher] as const;
