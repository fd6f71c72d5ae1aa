package statsv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// every call of Koor's released dashboard API only reads, as the seed's stats.StatsService.
func init() {
	access.Declare("api.services.stats.v1.StatsService", map[string]access.Kind{
		"GetClusterStats":            access.Read,
		"GetClusterResources":        access.Read,
		"GetClusterNodes":            access.Read,
		"GetClusterRadar":            access.Read,
		"ListClusterRecommendations": access.Read,
	})
}
