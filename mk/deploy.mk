# Kubernetes deployment (deploy/helm/edgeplane): offline checks, no cluster.
#
#   make test-deploy   helm lint + helm template | kubernetes-validate --strict
#                      for the default values and every variant in ci/
#                      (deploy/validate); the manifest rules a data plane needs
#                      are tests/test_deploy_manifests.py, run with the pytest files.

TEST_TARGETS += test-deploy

.PHONY: test-deploy

test-deploy: setup
	@deploy/validate
