import billing from './billing';
import identity from './identity';
import publisher from './publisher';
import commerce from './commerce';

/**
 * Every area of the platform. The composition root, the CLI, the bridge's routes and the router's
 * feeds loop over this list; adding an area is its folder plus one line here.
 */
export const AREAS = [identity, publisher, commerce, billing] as const;
