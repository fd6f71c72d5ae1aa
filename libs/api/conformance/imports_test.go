package conformance

// Every generated package of libs/api is linked in (libs/api/all), so that its files are
// registered in protoregistry.GlobalFiles, which the tests compare with the upstream facts.
import _ "github.com/plinth-dev/plinth/libs/api/all"
