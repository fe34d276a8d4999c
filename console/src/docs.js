// The interactive API docs (/docs): Swagger UI from the console's own npm packages, so the
// page runs no script from another origin (FastAPI's default page loads it from a CDN).
window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: "none", // its badge is an image from validator.swagger.io, which the policy refuses
});
