//! Explaining Pending pods as `PodplaceWhy` Events: the main cause the way
//! `podplace why` names it and the first verified fix.
