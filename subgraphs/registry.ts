import identity from './identity';
import publisher from './publisher';
import assets from './assets';
import objstore from './objstore';
import mail from './mail';
import commerce from './commerce';
import billing from './billing';
import activity from './activity';

/**
 * Every area of the platform by name, in port order. The composition root, the CLI, the bridge's routes
 * and the router's feeds loop over this list; adding an area is its folder plus one line here.
 */
export const AREAS = { identity, publisher, assets, objstore, mail, commerce, billing, activity } as const;
