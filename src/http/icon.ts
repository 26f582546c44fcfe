/**
 * The service's tab icon, inline (an SVG data URL). A page whose CSP allows images from its own
 * origin (the portal's pages, the embed page) names it in `<link rel="icon">`: otherwise browsers
 * ask for /favicon.ico, which the service does not serve, and log its 404 at every first load.
 * The CSP must allow it (`img-src data:`).
 */
export const ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%231d4ed8'/%3E%3Cpath d='M4 11l3-4 2 2 3-4' stroke='white' stroke-width='1.6' fill='none'/%3E%3C/svg%3E";
