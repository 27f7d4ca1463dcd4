package fleet

import "strings"

// An agent upgrade's failures, each turned into a cause and a fix: the API's checks before the
// upgrade module (1701, 1703, 1707, 1731) and the module's own refusals and task errors, which the
// API answers as 1810 + the module's code (framework exception 1810, "the error message will be the
// output of upgrade module"; wazuh-modulesd wm_agent_upgrade upgrade_error_codes). Sources:
// ../shared/reference/versions-and-agents.md §4.

// UpgradeCause is why one agent's upgrade failed and what to do about it.
type UpgradeCause struct {
	Code  int    `json:"code"`
	Cause string `json:"cause"`
	Fix   string `json:"fix"`
}

var upgradeCauses = map[int]UpgradeCause{
	1701: {Cause: "the agent is not registered on the manager (removed since the plan?)",
		Fix: "drop it from the run: `siemctl agents list` shows the registered agents; plan again"},
	1703: {Cause: "agent 000 is the manager itself; it is not upgraded through the agent upgrade module",
		Fix: "upgrade the manager with `siemctl upgrade apply --to V`, then the agents"},
	1707: {Cause: "the agent is not active (disconnected or never connected): the manager cannot send it the WPK",
		Fix: "bring the agent back (its service, the network to port 1514); `siemctl agents upgrade resume` sends it when it is active"},
	1731: {Cause: "the agent does not match the request's filters (group, os, node, version) any more",
		Fix: "check the agent's group, platform and node with `siemctl agents show ID`, then plan again"},
	1817: {Cause: "the upgrade module refuses agent 000 (the manager)",
		Fix: "upgrade the manager with `siemctl upgrade apply --to V`"},
	1818: {Cause: "the upgrade module found the agent not active when it tried to send",
		Fix: "bring the agent back; `siemctl agents upgrade resume` sends it when it is active"},
	1819: {Cause: "the WPK repository has no package for the agent's platform (or architecture)",
		Fix: "publish the WPK for that platform in your repository (wpk_repo) or upgrade those agents with their OS package; exclude them with --os"},
	1820: {Cause: "an upgrade task for the agent is still running (Pending, In progress or Updating)",
		Fix: "wait for it: `siemctl agents upgrade status`; a task stuck in Updating ends at the manager's task_timeout (900 s)"},
	1821: {Cause: "the agent's version is too old for a remote upgrade (WPK upgrades need 3.0.0 or later)",
		Fix: "upgrade the agent with its OS package on the host, then it can be upgraded remotely"},
	1822: {Cause: "the agent already runs the target version or a newer one (for a 5.x target: the agent is below 4.14.0 and must go to 4.14.x first)",
		Fix: "nothing to do for an agent at the target; for 5.x, upgrade to 4.14.x first (`siemctl agents upgrade apply --to 4.14.x`)"},
	1823: {Cause: "the target is newer than the manager: the module refuses without force (agents must not be newer than the manager)",
		Fix: "upgrade the manager first (`siemctl upgrade apply --to V`), or choose a target no newer than the manager"},
	1824: {Cause: "the manager cannot reach the WPK repository",
		Fix: "check the manager's access to packages.wazuh.com (proxy, DNS, firewall) or point wpk_repo at a reachable mirror"},
	1825: {Cause: "the repository has no WPK for the target version",
		Fix: "check the version (`siemctl agents upgrade plan --to V`); use a published release"},
	1826: {Cause: "the WPK file does not exist (upgrade_custom: the file_path on the manager, or the download failed)",
		Fix: "put the WPK under the manager's install directory and check the path, or let the manager download it again"},
	1827: {Cause: "the WPK's SHA1 does not match the repository's checksum (corrupt or altered download)",
		Fix: "remove the cached WPK under var/upgrade on the manager and retry; check the mirror"},
	1828: {Cause: "sending the WPK failed at lock_restart: the agent did not accept the upgrade lock (typical of bulk sends beyond the manager's threads, wazuh#27754)",
		Fix: "retry with fewer sends at once (--concurrency below the manager's max_threads); check the agent's connection"},
	1829: {Cause: "sending the WPK failed at open: the agent could not create the file",
		Fix: "check the agent's disk space and the permissions of its var/upgrade directory"},
	1830: {Cause: "sending the WPK failed at write: the transfer to the agent broke",
		Fix: "check the agent's disk space and its connection to the manager; retry"},
	1831: {Cause: "sending the WPK failed at close on the agent",
		Fix: "check the agent's disk and its ossec.log; retry"},
	1832: {Cause: "the WPK's SHA1 on the agent differs from the manager's after the transfer",
		Fix: "retry: the transfer was corrupted; check the network path between agent and manager"},
	1833: {Cause: "the agent refused the upgrade command after the WPK was sent",
		Fix: "check the agent's ossec.log (active response, upgrade settings: <remote_upgrade>) and retry"},
	1834: {Cause: "the installer on the agent exited with an error",
		Fix: "read the agent's upgrade.log (var/upgrade/upgrade.log or C:\\Program Files (x86)\\ossec-agent\\upgrade\\upgrade.log); fix and retry"},
	1835: {Cause: "the installer needs a dependency the agent's host lacks",
		Fix: "install the missing dependency named in the agent's upgrade.log and retry"},
	1836: {Cause: "the agent did not start after the upgrade (it rolled back or stays stopped)",
		Fix: "check the agent's service and ossec.log on the host; start it, then run `siemctl agents upgrade resume`"},
}

// taskMessages maps the module's task error messages (upgrade_result error_msg) to their codes.
var taskMessages = []struct {
	prefix string
	code   int
}{
	{"The WPK for this platform is not available", 1819},
	{"Upgrade procedure could not start. Agent already upgrading", 1820},
	{"Remote upgrade is not available for this agent version", 1821},
	{"Current agent version is greater or equal", 1822},
	{"Direct upgrade to", 1822},
	{"Upgrading an agent to a version higher than the manager requires the force flag", 1823},
	{"The repository is not reachable", 1824},
	{"The version of the WPK does not exist in the repository", 1825},
	{"The WPK file does not exist", 1826},
	{"The WPK sha1 of the file is not valid", 1827},
	{"Send lock restart error", 1828},
	{"Send open file error", 1829},
	{"Send write file error", 1830},
	{"Send close file error", 1831},
	{"Send verify sha1 error", 1832},
	{"Send upgrade command error", 1833},
	{"Upgrade procedure exited with error code", 1834},
	{"Upgrade procedure failed due to missing dependency", 1835},
	{"The agent could not start", 1836},
	{"Agent is not active", 1818},
	{"Action not available for Manager", 1817},
}

// TaskErrorCode is the code of an upgrade task's error message (0 when unknown).
func TaskErrorCode(msg string) int {
	for _, m := range taskMessages {
		if strings.HasPrefix(strings.TrimSpace(msg), m.prefix) {
			return m.code
		}
	}
	return 0
}

// CauseOf is the cause and fix of an upgrade failure's code; an unknown code keeps the manager's message.
func CauseOf(code int, message string) UpgradeCause {
	c, ok := upgradeCauses[code]
	if !ok {
		c = UpgradeCause{Cause: "the manager answered: " + message, Fix: "read the manager's ossec.log (wazuh-modulesd:agent-upgrade) for this agent"}
	}
	c.Code = code
	return c
}
