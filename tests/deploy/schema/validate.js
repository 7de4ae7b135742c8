// SPDX-License-Identifier: Apache-2.0
// tests/deploy/schema/validate.js - every object of a rendered overlay
// against its schema: kubernetes-models (the Kubernetes API),
// @kubernetes-models/prometheus-operator and @kubernetes-models/cert-manager
// (their CRDs), with unknown fields refused.
//
// usage: node validate.js MODULES_DIR OBJECTS.json
// MODULES_DIR holds node_modules (the Makefile's build/deploy-tools/schema);
// OBJECTS.json is a JSON array of objects (the rendered YAML, converted).
// Prints one line per object ("ok KIND NAME" or "FAIL KIND NAME: why") and
// exits 1 if any failed, 2 on bad usage.
//
// Why the strictness is ours: the packages' validate() is their JSON
// schemas compiled by ajv, and those schemas (like the API's OpenAPI) do
// not say additionalProperties: false, so a misspelled field
// ("imagePullPolicyy") passes and the API server would drop it.  The
// compiled validators read every property their schema declares (to check
// it, or to find it absent) and iterate every key of a map
// (additionalProperties with a schema: labels, annotations, volume
// attributes); they never read a key the schema does not know.  So the
// object is validated through a Proxy that records which keys were read,
// and a key present but never read is unknown.  An object whose schema is
// open (no properties, no value schema) would read as all unknown: a
// false failure, never a false pass.
"use strict";

const path = require("path");
const fs = require("fs");
const { createRequire } = require("module");

if (process.argv.length !== 4) {
	console.error("usage: node validate.js MODULES_DIR OBJECTS.json");
	process.exit(2);
}
const modulesDir = path.resolve(process.argv[2]);
const load = createRequire(path.join(modulesDir, "package.json"));

// apiVersion -> the module whose exports are that version's kinds.
function modelsFor(apiVersion) {
	const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
	if (group === "monitoring.coreos.com")
		return load(`@kubernetes-models/prometheus-operator/${group}/${version}`);
	if (group === "cert-manager.io")
		return load(`@kubernetes-models/cert-manager/${group}/${version}`);
	return load(group === "" ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`);
}

// A deep copy of v whose objects record, in seen, the paths of the own
// keys that anything reads.
function tracked(v, at, seen) {
	if (Array.isArray(v)) return v.map((x, i) => tracked(x, `${at}/${i}`, seen));
	if (v === null || typeof v !== "object") return v;
	const copy = {};
	for (const k of Object.keys(v)) copy[k] = tracked(v[k], `${at}/${k}`, seen);
	return new Proxy(copy, {
		get(target, key, receiver) {
			if (typeof key === "string" && Object.prototype.hasOwnProperty.call(target, key))
				seen.add(`${at}/${key}`);
			return Reflect.get(target, key, receiver);
		},
	});
}

// The paths of keys in v that were never read (not descending into them).
function unread(v, at, seen, out) {
	if (Array.isArray(v)) v.forEach((x, i) => unread(x, `${at}/${i}`, seen, out));
	else if (v !== null && typeof v === "object")
		for (const k of Object.keys(v)) {
			const p = `${at}/${k}`;
			if (seen.has(p)) unread(v[k], p, seen, out);
			else out.push(p);
		}
	return out;
}

function check(obj) {
	if (!obj || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string")
		return "not a Kubernetes object (apiVersion, kind)";
	let Model;
	try {
		Model = modelsFor(obj.apiVersion)[obj.kind];
	} catch (e) {
		Model = undefined;
	}
	if (typeof Model !== "function") return `no schema for ${obj.apiVersion} ${obj.kind}`;
	const seen = new Set();
	try {
		// The model's validate() with the tracked copy as `this`: the
		// schema's own checks (types, required fields, enums, formats).
		Model.prototype.validate.call(tracked(obj, "", seen));
	} catch (e) {
		return e.message;
	}
	const unknown = unread(obj, "", seen, []);
	return unknown.length ? `unknown field${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}` : null;
}

const objects = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
if (!Array.isArray(objects) || objects.length === 0) {
	console.error(`${process.argv[3]}: not a non-empty JSON array`);
	process.exit(2);
}
let failed = 0;
for (const obj of objects) {
	const name = `${obj && obj.kind} ${obj && obj.metadata && obj.metadata.namespace ? obj.metadata.namespace + "/" : ""}${obj && obj.metadata && obj.metadata.name}`;
	const why = check(obj);
	if (why) {
		failed++;
		console.log(`FAIL ${name}: ${why}`);
	} else {
		console.log(`ok ${name}`);
	}
}
process.exit(failed ? 1 : 0);
