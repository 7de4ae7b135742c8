# SPDX-License-Identifier: Apache-2.0
# The tools of the deploy/ checks (tests/deploy/manifests_test.sh), under
# $(DEPLOY_TOOLS); `make deploy-tools` fetches what is missing and does
# nothing when all is there.
#
# - kubectl 1.20 (its kustomize is v2.0): Debian 12's kubernetes-client,
#   the oldest kustomize the overlays promise to render with.  Unpacked
#   here from the package (apt-get download, dpkg-deb -x) rather than
#   installed, because it ships /usr/bin/kubectl, which a newer kubectl
#   (Google's package, say) may already own: apt would refuse, or replace
#   the operator's kubectl with an old one.
# - The schemas: the npm packages of tests/deploy/schema/package.json, at
#   the versions its package-lock.json pins (npm ci), with Node.js from
#   Debian's nodejs and npm when no node and npm are on the PATH (not in
#   DEB_PACKAGES: Debian's npm conflicts with other Node.js packages, e.g.
#   NodeSource's, which bundle npm).

DEPLOY_TOOLS   := $(BUILD)/deploy-tools
DEPLOY_KUBECTL := $(DEPLOY_TOOLS)/kubernetes-client/usr/bin/kubectl
DEPLOY_SCHEMA  := $(DEPLOY_TOOLS)/schema/node_modules/.package-lock.json

.PHONY: deploy-tools deploy-node prometheus-rule
deploy-tools: $(DEPLOY_KUBECTL) $(DEPLOY_SCHEMA)

$(DEPLOY_KUBECTL):
	@rm -rf $(DEPLOY_TOOLS)/kubernetes-client.tmp && mkdir -p $(DEPLOY_TOOLS)/kubernetes-client.tmp
	cd $(DEPLOY_TOOLS)/kubernetes-client.tmp && { apt-get download kubernetes-client || \
	  { SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; $$SUDO apt-get update -qq && apt-get download kubernetes-client; }; }
	dpkg-deb -x $(DEPLOY_TOOLS)/kubernetes-client.tmp/kubernetes-client_*.deb $(DEPLOY_TOOLS)/kubernetes-client.tmp/root
	@$(DEPLOY_TOOLS)/kubernetes-client.tmp/root/usr/bin/kubectl version --client | grep -q 'GitVersion:"v1\.20\.' || \
	  { echo "kubernetes-client: not kubectl 1.20"; exit 1; }
	rm -rf $(DEPLOY_TOOLS)/kubernetes-client && mv $(DEPLOY_TOOLS)/kubernetes-client.tmp/root $(DEPLOY_TOOLS)/kubernetes-client
	rm -rf $(DEPLOY_TOOLS)/kubernetes-client.tmp

deploy-node:
	@command -v node >/dev/null && command -v npm >/dev/null || $(MAKE) --no-print-directory deploy-node-packages
.PHONY: deploy-node-packages
deploy-node-packages:
	$(call install_missing,nodejs npm)

$(DEPLOY_SCHEMA): tests/deploy/schema/package.json tests/deploy/schema/package-lock.json | deploy-node
	@mkdir -p $(DEPLOY_TOOLS)/schema
	cp tests/deploy/schema/package.json tests/deploy/schema/package-lock.json $(DEPLOY_TOOLS)/schema/
	cd $(DEPLOY_TOOLS)/schema && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# deploy/monitoring/prometheus-rule.yaml from deploy/prometheus/alerts.yaml
# (the test fails when they differ).
prometheus-rule:
	deploy/monitoring/prometheus-rule.sh deploy/prometheus/alerts.yaml > deploy/monitoring/prometheus-rule.yaml.tmp
	mv deploy/monitoring/prometheus-rule.yaml.tmp deploy/monitoring/prometheus-rule.yaml
